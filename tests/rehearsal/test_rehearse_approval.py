"""A rehearsal scene scripts the DM's answers to approval questions: Bartok's dice rolls wait
for the DM, the first is denied and the second approved, and both decisions land in the tool
invocation log. Real Whisper and espeak-ng, the real tool host, the scripted LLM server."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from scripted_config import scripted_config

from bot.bench.doubles.instant_llm import InstantLlm
from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing"),
]


def test_scene_scripts_the_dms_answers(tmp_path: Path, llm: InstantLlm) -> None:
    campaign = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    bartok_file = campaign / "npcs" / "bartok.yaml"
    bartok = yaml.safe_load(bartok_file.read_text())
    bartok["approval"] = {"tools": {"roll": "always_ask"}}
    bartok_file.write_text(yaml.safe_dump(bartok))
    config = scripted_config(tmp_path, llm, campaign)
    scene = tmp_path / "scene.yaml"
    scene.write_text(
        yaml.safe_dump(
            {
                "title": "approvals",
                "campaign": str(campaign),
                "players": {"Arin": {"provider": "espeak", "voice": "en-us"}},
                "lines": [
                    {"at": 0.5, "speaker": "Arin", "text": "Bartok, roll a die for me."},
                    {"at": 2, "speaker": "Arin", "text": "Bartok, roll again please."},
                ],
                "approvals": [
                    {"tool": "roll", "answer": "deny", "by": "Dana"},
                    {"npc": "Bartok", "tool": "roll", "answer": "approve", "after_s": 0.5},
                ],
                "tail_s": 60,
            }
        )
    )
    out = tmp_path / "out"
    assert main(["--config", str(config), "rehearse", str(scene), "--out", str(out)]) == 0
    with sqlite3.connect(out / "memory.db") as db:
        rows = db.execute(
            "SELECT npc, tool, status, approval FROM tool_invocations ORDER BY id"
        ).fetchall()
    # Exactly two questions: a speculative turn (started on a partial) never asks the DM.
    assert rows == [
        ("Bartok", "roll", "refused", "denied by Dana"),
        ("Bartok", "roll", "ok", "approved by DM"),
    ]
    # Bartok is told of the refusal: as his own call's result, or as the note of the roll the
    # table tried for Arin (which of the two asked depends on the words Whisper heard)
    told = [str(m["content"]) for r in llm.requests for m in r["messages"]]
    assert any("the DM refused it" in content for content in told)
