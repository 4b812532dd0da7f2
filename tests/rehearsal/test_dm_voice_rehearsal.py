"""A DM voice command end to end: ``glyphoxa rehearse campaigns/example/dm_voice.yaml``, the DM
and a player synthesized by Piper, heard by real Whisper, through the real table (VAD, address
detection, tier selector, tools, memory) with a scripted OpenAI-compatible LLM server.

The override takes effect for the next turn, and the player's identical words do not override."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from scripted_config import scripted_config

from bot.bench.doubles.instant_llm import InstantLlm
from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"

pytestmark = pytest.mark.slow


def _greymantle_tools(llm: InstantLlm) -> list[set[str]]:
    """The tools offered in each first request of a Greymantle turn (one per answer)."""
    firsts = [
        r
        for r in llm.requests
        if r.get("stream")
        and "You are Greymantle" in r["messages"][0]["content"]
        and not any(m["role"] in ("assistant", "tool") for m in r["messages"][1:])
    ]
    return [{t["function"]["name"] for t in r.get("tools", [])} for r in firsts]


def _first_of_runs(records: list[dict], key: str) -> list[dict]:
    """The first record of each run of records with the same ``key``."""
    return [next(run) for _, run in itertools.groupby(records, key=lambda r: r[key])]


def test_dm_voice_command_in_a_rehearsal_scene(tmp_path: Path, llm: InstantLlm) -> None:
    # one request per turn: no speculative or prefill requests to tell apart
    config = scripted_config(tmp_path, llm, speculate=False)
    out = tmp_path / "out"
    scene = EXAMPLE / "dm_voice.yaml"
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out),
                 "--playout-speed", "8"])  # fmt: skip
    report = (out / "report.md").read_text()
    assert code == 0, report  # every expect_npc / expect_tier / expect_command check passed
    records = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    routed = [r for r in records if r["type"] == "routed"]
    # Dana's lines were commands, answered by nobody; Arin's identical words were a turn.
    dana = [r for r in routed if r["speaker"] == "Dana"]
    assert [r["reason"] for r in dana] == [
        "DM voice command: tier deep for Greymantle",
        "DM voice command: tier auto for all NPCs",
    ]
    assert all(r["npcs"] == [] for r in dana)
    # A line may be heard as two (a pause after "Greymantle," on a busy machine): its pieces
    # share the line's tier, so runs of one tier are one line.
    arin = _first_of_runs([r for r in routed if r["speaker"] == "Arin"], "tier")
    assert [r["tier"] for r in arin] == ["standard", "deep", "fast", "deep", "fast"]
    assert arin[1]["tier_reason"] == "DEEP phrase 'take your time'"
    assert arin[3]["tier_reason"].startswith("DM override deep for Greymantle")
    dm = [r for r in records if r["type"] == "dm"]
    assert [(r["action"], r["detail"]) for r in dm] == [
        ("tier", "deep for Greymantle for 300s"),
        ("tier", "auto for all NPCs"),
    ]
    assert all(r["heard"].startswith("Dana: ") for r in dm)
    # The engine saw it: DEEP tools (web search) only in the override turn and the player's
    # own DEEP phrase turn, FAST tools after the DM's "back to normal".
    deep = [web for web, _ in itertools.groupby("web_search" in o for o in _greymantle_tools(llm))]
    assert deep == [False, True, False, True, False]
    # The report shows the decision and its reason per turn, the checks and the DM's actions.
    assert "[deep (DM override deep for Greymantle" in report
    assert "PASS" in report and "FAIL" not in report
    assert "expected DM command tier deep for Greymantle, got tier deep for Greymantle" in report
    assert "DM " in report and "by voice, heard \u201cDana: " in report
