"""A rehearsal scene that names a speaker's character: ``glyphoxa rehearse`` with real Piper,
Whisper, tools and memory and the scripted OpenAI-compatible LLM server. The NPC's prompt, the
transcript and the campaign memory call the player by the character; an unlisted speaker keeps
their own name; a character called like an NPC is refused before anything runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

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


def _scene(tmp_path: Path, characters: dict[str, str]) -> Path:
    scene = tmp_path / "scene.yaml"
    lines: list[dict[str, Any]] = [
        {"at": 0.5, "speaker": "Aria", "text": "Bartok, what's on tap tonight?",
         "expect_npc": "Bartok"},
        {"at": 2, "speaker": "Tobble", "text": "Greymantle, tell me about the Black Candle.",
         "expect_npc": "Greymantle"},
    ]  # fmt: skip
    scene.write_text(
        yaml.safe_dump(
            {
                "title": "characters",
                "campaign": str(EXAMPLE),
                "characters": characters,
                "lines": lines,
                "tail_s": 60,
            }
        )
    )
    return scene


def _asked(llm: InstantLlm, npc: str) -> str:
    """The player's part of the first request of ``npc``'s turn."""
    request = next(r for r in llm.requests if f"You are {npc}" in r["messages"][0]["content"])
    return str(request["messages"][1]["content"])


def test_a_scene_names_a_speakers_character(tmp_path: Path, llm: InstantLlm) -> None:
    config = scripted_config(tmp_path, llm, speculate=False)
    out = tmp_path / "out"
    scene = _scene(tmp_path, {"Aria": "Arin Duskwalker"})
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out),
                 "--playout-speed", "8"])  # fmt: skip
    report = (out / "report.md").read_text()
    assert code == 0, report  # the expect_npc checks found the character's lines
    assert "Arin Duskwalker says to you: Bartok," in _asked(llm, "Bartok")
    greymantle = _asked(llm, "Greymantle")
    assert 'Arin Duskwalker said: "Bartok' in greymantle and "Tobble says to you:" in greymantle
    assert "Aria" not in json.dumps(llm.requests)
    records = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    routed = [(r["speaker"], r["npcs"]) for r in records if r["type"] == "routed"]
    assert routed == [("Arin Duskwalker", ["Bartok"]), ("Tobble", ["Greymantle"])]
    with sqlite3.connect(out / "memory.db") as db:
        speakers = {
            row[0] for row in db.execute("SELECT speaker FROM utterances WHERE npc IS NULL")
        }
        bindings = list(db.execute("SELECT user_id, character, bound_by FROM character_bindings"))
    assert speakers == {"Arin Duskwalker", "Tobble"}
    assert bindings == [("player-1", "Arin Duskwalker", "the scene")]


def test_a_scene_character_named_like_an_npc_is_refused(
    tmp_path: Path, llm: InstantLlm, capsys: pytest.CaptureFixture[str]
) -> None:
    config = scripted_config(tmp_path, llm)
    scene = _scene(tmp_path, {"Aria": "the Sage"})
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(tmp_path / "o")])
    assert code != 0
    err = capsys.readouterr().err
    assert "scene characters.Aria: character name 'the Sage' is the NPC Greymantle's alias" in err
    assert not llm.requests
