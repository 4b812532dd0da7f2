"""The scenes ``glyphoxa bench e2e`` plays, and how it reads a turn's latency by cause.

* The FAST sample: ten short lines to the example campaign's barkeep (FAST by his budget), two
  of them continuations without his name, one every few seconds.
* The full table: the same ten lines, while two more players talk to each other the whole time
  (table talk over the answered turns: their lanes, partials and finals compete for the same
  cores) and a fourth sits with an open, quiet lane.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.frontends.rehearsal.scene import Scene
from campaigns.basics import percentile

__all__ = [
    "CAUSES",
    "EXAMPLE_SCENE",
    "FAST_LINES",
    "TABLE_TALK",
    "cause_summary",
    "causes_of",
    "fast_scene",
]

EXAMPLE_SCENE = Path(__file__).resolve().parents[2] / "campaigns" / "example" / "scene.yaml"
"""The example campaign's scene; its folder is the campaign every e2e figure is measured on."""

#: Short lines to the barkeep (FAST by his budget), two of them continuations without his name.
FAST_LINES = (
    "Bartok, what's on tap tonight?",
    "Great, pour me a pint.",
    "Bartok, is the stew any good?",
    "Bartok, who is that in the corner?",
    "And what about the bard?",
    "Bartok, is it raining outside?",
    "Bartok, how much for a room?",
    "Bartok, any news from the docks?",
    "Bartok, got any rumors for me?",
    "Bartok, another ale please.",
)

#: Two players chatting among themselves: no NPC's name, nothing for an NPC to answer.
TABLE_TALK = (
    ("Tobble", "Did you see the size of that rat in the cellar earlier?"),
    ("Mira", "I did, it ran right past my boots and out the door."),
    ("Tobble", "I think we should count our coins before we order more."),
    ("Mira", "We have plenty left from selling the old sword this morning."),
    ("Tobble", "That sword was my grandfather's, you know, a family heirloom."),
    ("Mira", "Then you should not have left it lying in the wagon all week."),
    ("Tobble", "Fair enough. Where are we sleeping tonight, by the way?"),
    ("Mira", "Upstairs, if the rooms are cheap, otherwise in the stable again."),
)


def fast_scene(campaign: Path, *, full_table: bool) -> Scene:
    """The FAST sample, alone or at a full table (table talk for the whole scene)."""
    lines: list[dict[str, Any]] = [
        {"at": 1 + 2 * i, "speaker": "Arin", "text": text, "expect_npc": "Bartok"}
        for i, text in enumerate(FAST_LINES)
    ]
    players: dict[str, Any] = {"Arin": {"provider": "piper", "speed": 1.1, "pitch_shift": 3}}
    if full_table:
        players |= {
            "Tobble": {"provider": "espeak", "voice": "en-us+m3"},
            "Mira": {"provider": "piper", "speed": 1.05, "pitch_shift": -4},
            "Dain": {"provider": "espeak", "voice": "en-gb+m5"},
        }
        lines.append({"at": 0.2, "speaker": "Dain", "text": "Evening, all.", "overlap": True})
        at = 0.6
        while at < 2 * len(FAST_LINES) + 6:  # talk through every answered turn
            for speaker, text in TABLE_TALK:
                lines.append({"at": round(at, 2), "speaker": speaker, "text": text,
                              "overlap": True})  # fmt: skip
                at += 0.075 * len(text) + 0.6  # about the time it takes to say, then a breath
    return Scene.model_validate(
        {
            "title": "FAST turns at a full table" if full_table else "FAST turns",
            "campaign": str(campaign),
            "players": players,
            "lines": lines,
            "tail_s": 60,
        }
    )


#: Where the time of a turn goes, from the end of the player's words to the NPC's voice.
CAUSES = (
    "endpointing",  # waiting to be sure the player finished
    "recognition",  # the final transcript after the turn ended
    "npc busy",  # the NPC was still answering someone else
    "llm",  # the model's first sentence (tool rounds and re-asked answers included)
    "tool rounds",  # of which: tools the model called before answering
    "tts",  # the voice's first audio
    "floor",  # another NPC was speaking
    "playback",  # the mixer's next frame
)


def causes_of(turn: dict[str, Any]) -> dict[str, float]:
    """One turn's voice-to-voice split by cause (ms; stages that did not happen are left out)."""
    stages = turn["stages_ms"]
    llm = sum(stages[s] or 0.0 for s in ("route", "llm_first_token", "first_sentence"))
    floor = turn.get("floor_wait_ms") or 0.0
    out = {
        "endpointing": stages.get("endpoint"),
        "recognition": stages.get("stt_final"),
        "npc busy": stages.get("queue"),
        "llm": llm,
        "tool rounds": turn.get("tool_cost_ms") or 0.0,
        "tts": stages.get("tts_first_audio"),
        "floor": floor,
        "playback": max(0.0, (stages.get("to_playback") or 0.0) - floor),
    }
    return {name: max(0.0, value) for name, value in out.items() if value is not None}


def cause_summary(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95 per cause over ``turns`` (those that played), and which cause dominated each of
    the slowest quarter of them."""
    played = [t for t in turns if t["stages_ms"].get("voice_to_voice") is not None]
    if not played:
        return {}
    split = [causes_of(t) for t in played]
    per_cause = {}
    for cause in CAUSES:
        values = [s[cause] for s in split if cause in s]
        if values:
            per_cause[cause] = {"p50": round(percentile(values, 50), 1),
                                "p95": round(percentile(values, 95), 1)}  # fmt: skip
    v2v = sorted(t["stages_ms"]["voice_to_voice"] for t in played)
    slow_from = v2v[int(len(v2v) * 0.75)]
    dominant: dict[str, int] = {}
    for turn, parts in zip(played, split, strict=True):
        if turn["stages_ms"]["voice_to_voice"] >= slow_from:
            main = max((c for c in parts if c != "tool rounds"), key=lambda c: parts[c])
            dominant[main] = dominant.get(main, 0) + 1
    return {"per_cause_ms": per_cause, "slowest_quarter_dominated_by": dominant}
