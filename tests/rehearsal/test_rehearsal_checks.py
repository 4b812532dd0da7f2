"""The rehearsal's checks and verdict, from records alone: a PASS needs every NPC turn answered
with audio, the expected NPCs answering, the named tools running and nothing left over."""

from __future__ import annotations

from typing import Any

from bot.frontends.rehearsal.checks import scene_checks, verdict
from bot.frontends.rehearsal.players import LineAudio
from bot.frontends.rehearsal.scene import Scene
from bot.frontends.rehearsal.schedule import ScenePlan

SCENE = Scene.model_validate(
    {
        "lines": [
            {"at": 1, "speaker": "Arin", "text": "Bartok, roll for me.", "expect_npc": "Bartok",
             "expect_tools": ["roll"]},
            {"at": 5, "speaker": "Tobble", "text": "Greymantle?", "expect_npc": "Greymantle"},
        ]
    }
)  # fmt: skip


def plan(started: dict[int, int]) -> ScenePlan:
    made = ScenePlan(SCENE, [LineAudio(line, b"", 0.5) for line in SCENE.lines])
    made.started = dict(started)
    return made


def routed(t: float, speaker: str, npc: str) -> dict[str, Any]:
    return {"t": t, "type": "routed", "speaker": speaker, "text": "...", "npcs": [npc]}


def answer(t: float, turn: int, npc: str, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"t": t, "type": "npc", "turn": turn, "npc": npc, "speaker": speaker, "text": text,
            "interrupted": False, "error": None, **extra}  # fmt: skip


def turn(number: int, npc: str, *, played: bool = True, tools: tuple[str, ...] = (),
         **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {"turn": number, "npc": npc, "played": played, "interrupted": False, "error": None,
            "tools": [{"name": t, "status": "ok", "ms": 1.0} for t in tools], **extra}  # fmt: skip


GOOD_RECORDS = [
    routed(2.0, "Arin", "Bartok"),
    answer(2.8, 1, "Bartok", "Arin", "Rolled a four."),
    routed(6.0, "Tobble", "Greymantle"),
    answer(6.9, 2, "Greymantle", "Tobble", "Hmm."),
]


def test_a_clean_run_passes() -> None:
    turns = [turn(1, "Bartok", tools=("roll",)), turn(2, "Greymantle")]
    checks = scene_checks(plan({0: 50, 1: 250}), GOOD_RECORDS, turns)
    assert all(check.ok for check in checks), [str(c) for c in checks]
    assert len(checks) == 5  # two routings, two answers, one tool expectation
    assert verdict(checks, turns)[0].startswith("**PASS**: 2 NPC turns, 2 with audio")


def test_a_failed_turn_fails_the_run_even_when_it_said_a_filler_line() -> None:
    error = "LLM server unreachable at http://127.0.0.1:9/v1: check providers.llm.base_url"
    records = [*GOOD_RECORDS[:3],
               answer(6.9, 2, "Greymantle", "Tobble", "Let me see...", error=error)]  # fmt: skip
    turns = [turn(1, "Bartok", tools=("roll",)),
             turn(2, "Greymantle", error=error, fallback="Let me see...")]  # fmt: skip
    checks = scene_checks(plan({0: 50, 1: 250}), records, turns)
    failed = [str(c) for c in checks if not c.ok]
    assert failed == [
        f"FAIL 5.0s Tobble -> Greymantle: answer failed: {error}",
        f'FAIL turn #2 Greymantle failed (said "Let me see..." instead): {error}',
    ]
    head = verdict(checks, turns)
    assert head[0] == "**FAIL**: 2 of 6 checks failed; 1 of 2 NPC turns failed."
    assert head[1] == f"- cause: {error}"


def test_silence_a_missing_tool_an_unanswered_line_and_leftovers_each_fail() -> None:
    records = [routed(2.0, "Arin", "Bartok"), answer(2.8, 1, "Bartok", "Arin", ""),
               routed(6.0, "Tobble", "Greymantle")]  # fmt: skip
    turns = [turn(1, "Bartok", played=False)]
    left = ["1 NPC turn(s) still queued when the scene ended"]
    checks = scene_checks(plan({0: 50, 1: 250}), records, turns, left)
    failed = [str(c) for c in checks if not c.ok]
    assert failed == [
        "FAIL 1.0s Arin -> Bartok: answered without audio",
        "FAIL 1.0s Arin -> Bartok: tool(s) roll did not run (ran: none)",
        "FAIL 5.0s Tobble -> Greymantle: never answered",
        "FAIL turn #1 Bartok produced no audio",
        "FAIL 1 NPC turn(s) still queued when the scene ended",
    ]


def test_a_line_that_never_started_fails_and_a_barge_in_before_audio_is_fine() -> None:
    records = [routed(2.0, "Arin", "Bartok"),
               answer(2.8, 1, "Bartok", "Arin", "", interrupted=True)]  # fmt: skip
    turns = [turn(1, "Bartok", played=False, interrupted=True, tools=("roll",))]
    checks = scene_checks(plan({0: 50}), records, turns)
    assert [str(c) for c in checks if not c.ok] == [
        "FAIL 1 line(s) never started (the scene ran out of time)"
    ]
    assert "cut off by a barge-in before it spoke" in str(checks[1])
