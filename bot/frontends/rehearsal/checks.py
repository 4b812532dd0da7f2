"""What a rehearsal must show before it may say PASS.

Not only that the right NPC was addressed (and, where a line says so, with the expected tier,
or taken as the expected DM voice command): every NPC turn answered with audio (a failed turn
that covered itself with a filler line still failed), each line's expected NPC answered it,
the tools a line names ran, every line and DM command was played, and nothing was left
queued when the scene ended. Pure functions of the run's records, so they are tested without
any model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.audio.speech import FRAME_MS
from bot.frontends.rehearsal.schedule import ScenePlan
from bot.frontends.rehearsal.steering import tier_checks

__all__ = ["Check", "scene_checks", "verdict"]

_TICK_S = FRAME_MS / 1000


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    text: str

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.text}"


def scene_checks(
    plan: ScenePlan,
    records: Sequence[dict[str, Any]],
    turns: Sequence[dict[str, Any]],
    leftovers: Sequence[str] = (),
) -> list[Check]:
    """Every check of one run, in scene order, then per-turn and end-of-scene checks."""
    checks: list[Check] = []
    routed = [r for r in records if r["type"] == "routed"]
    answers = [r for r in records if r["type"] == "npc"]
    by_turn = {turn["turn"]: turn for turn in turns}
    claimed: set[int] = set()
    for index, start in sorted(plan.started.items(), key=lambda pair: pair[1]):
        line = plan.lines[index].line
        at = start * _TICK_S
        called = plan.scene.called(line.speaker)  # the character the table knows them by
        # The first of the speaker's routed lines from then on that no earlier line took: a
        # line nobody answers lets the next start before it is routed.
        match = next(
            (r for r in routed
             if r["speaker"] == called and (r["t"] or 0) >= at and id(r) not in claimed),
            None,
        )  # fmt: skip
        if match is not None:
            claimed.add(id(match))
        if not (line.expect_npc or line.expect_tier or line.expect_command):
            continue
        heard = f" (heard \u201c{match['text']}\u201d)" if match else " (nothing heard)"
        for kind, want, got, ok in tier_checks(line, match):
            checks.append(Check(ok, f"{at:.1f}s {line.speaker} -> expected {kind} {want}, "
                                    f"got {got}{heard}"))  # fmt: skip
        if not line.expect_npc:
            continue
        if line.expects_nobody:
            got = ", ".join(match["npcs"]) if match and match["npcs"] else "nobody"
            ok = match is not None and not match["npcs"]
            checks.append(
                Check(ok, f"{at:.1f}s {line.speaker} -> expected nobody, got {got}{heard}")
            )
            continue
        where = f"{at:.1f}s {line.speaker} -> {line.expect_npc}"
        ok = match is not None and line.expect_npc in match["npcs"]
        got = ", ".join(match["npcs"]) if match and match["npcs"] else "nobody"
        checks.append(Check(ok, f"{at:.1f}s {line.speaker} -> expected {line.expect_npc}, "
                                f"got {got}{heard}"))  # fmt: skip
        answer = next(
            (r for r in answers
             if r["npc"] == line.expect_npc and r.get("speaker") == called
             and not r.get("reaction_to") and (r["t"] or 0) >= at),
            None,
        )  # fmt: skip
        checks.append(_answered(where, answer))
        if line.expect_tools:
            ran = by_turn.get(answer["turn"], {}).get("tools", []) if answer else []
            checks.append(_tools_ran(where, line.expect_tools, ran))
    for turn in turns:
        name = f"turn #{turn['turn']} {turn['npc']}"
        if turn.get("error"):
            instead = f' (said "{turn["fallback"]}" instead)' if turn.get("fallback") else ""
            checks.append(Check(False, f"{name} failed{instead}: {turn['error']}"))
        elif not turn.get("played") and not turn.get("interrupted"):
            checks.append(Check(False, f"{name} produced no audio"))
    unplayed = len(plan.lines) - len(plan.started)
    if unplayed:
        checks.append(Check(False, f"{unplayed} line(s) never started (the scene ran out of time)"))
    checks.extend(Check(False, leftover) for leftover in leftovers)
    return checks


def _answered(where: str, answer: dict[str, Any] | None) -> Check:
    if answer is None:
        return Check(False, f"{where}: never answered")
    if answer.get("error"):
        return Check(False, f"{where}: answer failed: {answer['error']}")
    if not answer.get("text"):
        if answer.get("interrupted"):
            return Check(True, f"{where}: cut off by a barge-in before it spoke")
        return Check(False, f"{where}: answered without audio")
    return Check(True, f"{where}: answered with audio")


def _tools_ran(where: str, expected: Sequence[str], ran: Sequence[dict[str, Any]]) -> Check:
    ok = {tool["name"] for tool in ran if tool["status"] == "ok"}
    missing = [name for name in expected if name not in ok]
    seen = ", ".join(f"{t['name']}={t['status']}" for t in ran) or "none"
    if missing:
        return Check(False, f"{where}: tool(s) {', '.join(missing)} did not run (ran: {seen})")
    return Check(True, f"{where}: ran {', '.join(expected)}")


def verdict(checks: Sequence[Check], turns: Sequence[dict[str, Any]]) -> list[str]:
    """The report's first lines: PASS or FAIL, and plainly what failed."""
    failed = [check for check in checks if not check.ok]
    with_audio = sum(1 for t in turns if t.get("played") and not t.get("error"))
    if not failed:
        return [f"**PASS**: {len(turns)} NPC turns, {with_audio} with audio; "
                f"all {len(checks)} checks passed."]  # fmt: skip
    broken = [t for t in turns if t.get("error")]
    lines = [f"**FAIL**: {len(failed)} of {len(checks)} checks failed; "
             f"{len(broken)} of {len(turns)} NPC turns failed."]  # fmt: skip
    reasons = list(dict.fromkeys(str(t["error"]) for t in broken))
    lines += [f"- cause: {reason}" for reason in reasons[:3]]
    said = [check.text for check in failed if not any(r in check.text for r in reasons)]
    lines += [f"- {text}" for text in said if not text.startswith("turn #")][:5]
    return lines
