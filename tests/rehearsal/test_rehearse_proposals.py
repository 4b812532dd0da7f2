"""A rehearsal scene where an NPC proposes a fact: the real table runtime (Whisper, espeak-ng,
the tool host, campaign memory) queues it under the NPC and the scene's session, it stays out
of the NPCs' facts until the DM approves it from the command line, and then it is known."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from scripted_config import scripted_config

from bot.bench.doubles.instant_llm import PROPOSED_FACT, InstantLlm
from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing"),
]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_npc_proposes_and_the_dm_approves(
    tmp_path: Path, llm: InstantLlm, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    sage_file = campaign / "npcs" / "greymantle.yaml"
    sage = yaml.safe_load(sage_file.read_text())
    sage["tools"] = ["propose_memory", "get_summary"]
    sage_file.write_text(yaml.safe_dump(sage))
    config = scripted_config(tmp_path, llm, campaign)
    scene = tmp_path / "scene.yaml"
    scene.write_text(
        yaml.safe_dump(
            {
                "title": "proposals",
                "campaign": str(campaign),
                "players": {"Tobble": {"provider": "espeak", "voice": "en-us+m3"}},
                "lines": [
                    {
                        "at": 0.5,
                        "speaker": "Tobble",
                        "text": "Greymantle, tell me about the Black Candle.",
                        "expect_npc": "Greymantle",
                        "expect_tools": ["propose_memory"],
                    }
                ],
                "tail_s": 60,
            }
        )
    )
    out = tmp_path / "out"
    assert main(["--config", str(config), "rehearse", str(scene), "--out", str(out)]) == 0
    capsys.readouterr()
    memory = ["--config", str(config), "memory", "--url", f"sqlite+aiosqlite:///{out}/memory.db"]

    [session] = _cli(capsys, *memory, "sessions")
    [proposal] = _cli(capsys, *memory, "proposals")
    assert (proposal["npc"], proposal["entity_id"], proposal["text"]) == (
        "Greymantle", "black-candle", PROPOSED_FACT
    )  # fmt: skip
    assert proposal["session_id"] == session["id"] and proposal["status"] == "pending"
    assert _cli(capsys, *memory, "entity", "black-candle")["facts"] == []

    _cli(capsys, *memory, "proposals", "approve", str(proposal["id"]))
    facts = _cli(capsys, *memory, "entity", "black-candle")["facts"]
    assert [(f["npc"], f["text"]) for f in facts] == [("Greymantle", PROPOSED_FACT)]
    [entity] = _cli(capsys, *memory, "entities", "--name", "Black Candle", "--limit", "1")
    assert entity["facts"] == [PROPOSED_FACT]  # what the NPCs' name lookups now carry
