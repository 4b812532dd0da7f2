"""Two pipelines, the same lines, alternated: ours, the peer, ours, the peer...

Each line is said to our side, then (once our answer is over) the same audio to the peer, so
both meet the same machine load, the same LLM server and the same conversation so far; a
warm-up line goes first to each and is left out of the figures. The figures are each side's
voice-to-voice p50 and p95 over the lines it answered, and the ratios ours / peer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.bench.line_protocol import STAGES, LineRequest, LineTiming
from bot.bench.line_server import LineServer, SideFailed
from bot.bench.result import BenchResult
from campaigns.basics import percentile

__all__ = ["Duel", "Pair", "alternate", "duel_results"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One line as both sides answered it."""

    request: LineRequest
    ours: LineTiming
    peer: LineTiming | None
    """None when the peer stopped before this line."""

    def as_dict(self) -> dict[str, Any]:
        def side(timing: LineTiming | None) -> dict[str, Any] | None:
            if timing is None:
                return None
            return {"voice_to_voice_ms": timing.voice_to_voice_ms, "stages_ms": timing.stages_ms,
                    "heard": timing.heard, "reply": timing.reply, "error": timing.error,
                    **({"extra": timing.extra} if timing.extra else {})}  # fmt: skip

        return {"index": self.request.index, "text": self.request.text,
                "warm_up": self.request.warm_up, "ours": side(self.ours),
                "peer": side(self.peer)}  # fmt: skip


@dataclass(slots=True)
class Duel:
    """Every pair of a run, and why the peer stopped early (if it did)."""

    pairs: list[Pair] = field(default_factory=list)
    peer_failure: str | None = None

    def measured(self) -> list[Pair]:
        return [pair for pair in self.pairs if not pair.request.warm_up]


async def alternate(
    ours: LineServer,
    peer: LineServer,
    requests: Sequence[LineRequest],
    say: Callable[[str], None] = lambda message: None,
) -> Duel:
    """Say each line to ours, then to the peer. Our side failing ends the run
    (:class:`SideFailed`); the peer failing ends only its half, kept in ``peer_failure``."""
    duel = Duel()
    for request in requests:
        what = "warm-up" if request.warm_up else f"line {request.index}"
        mine = await ours.answer(request)
        theirs: LineTiming | None = None
        if duel.peer_failure is None:
            try:
                theirs = await peer.answer(request)
            except SideFailed as error:
                duel.peer_failure = str(error)
                say(f"  {error}; {ours.name} goes on alone")
        duel.pairs.append(Pair(request, mine, theirs))
        say(f"  {what} {request.text!r}: {ours.name} {_ms(mine)}, {peer.name} {_ms(theirs)}")
    return duel


def _ms(timing: LineTiming | None) -> str:
    if timing is None:
        return "-"
    if timing.voice_to_voice_ms is None:
        return f"no answer ({timing.error})"
    return f"{timing.voice_to_voice_ms:.0f} ms"


def _stats(timings: list[LineTiming]) -> tuple[float, float] | None:
    """p50 and p95 over the lines answered (an unanswered one has no voice-to-voice)."""
    values = [
        t.voice_to_voice_ms for t in timings if t.answered and t.voice_to_voice_ms is not None
    ]
    if not values:
        return None
    return percentile(values, 50), percentile(values, 95)


def _stage_p50(timings: list[LineTiming]) -> dict[str, float]:
    stages: dict[str, list[float]] = {}
    for timing in timings:
        if timing.answered:
            for name, value in timing.stages_ms.items():
                stages.setdefault(name, []).append(value)
    return {name: round(percentile(values, 50), 1) for name, values in stages.items()}


def _stage_note(timings: list[LineTiming]) -> str:
    stages = _stage_p50(timings)
    shown = ", ".join(f"{name} {stages[name]:.0f}" for name in STAGES if name in stages)
    return f"stage p50s, ms after the last voiced frame: {shown or 'none'}"


def duel_results(duel: Duel, ours_name: str, peer_name: str, method: str) -> list[BenchResult]:
    """The rows: the peer's p50/p95, ours in the same run, the ratios ours / peer (p50, p95);
    the JSON holds every line's pair and each side's stage p50s."""
    measured = duel.measured()
    mine = [pair.ours for pair in measured]
    theirs = [pair.peer for pair in measured if pair.peer is not None]
    ours_stats, peer_stats = _stats(mine), _stats(theirs)
    unanswered = {ours_name: sum(not t.answered for t in mine),
                  peer_name: sum(not t.answered for t in theirs)}  # fmt: skip
    extra: dict[str, Any] = {
        "pairs": [pair.as_dict() for pair in duel.pairs],
        "stage_p50_ms": {ours_name: _stage_p50(mine), peer_name: _stage_p50(theirs)},
        "unanswered": unanswered,
    }
    if duel.peer_failure:
        extra["peer_failure"] = duel.peer_failure
        method += f"; {peer_name} stopped after {len(theirs)} of {len(measured)} lines: "
        method += duel.peer_failure
    where = "FAST lines, alone, alternated line by line"
    same = f"the same lines and run as the {peer_name} p50 row"
    rows: list[BenchResult] = []
    if peer_stats is None:
        why = duel.peer_failure or f"{peer_name} answered none of the lines"
        rows.append(BenchResult(f"{peer_name} voice-to-voice p50 ({where})", float("nan"), "ms",
                                f"{method}; {why}", extra=extra))  # fmt: skip
    else:
        n = len(theirs) - unanswered[peer_name]
        note = f"{same}; {n} of {len(theirs)} answered; {_stage_note(theirs)}"
        rows += [
            BenchResult(f"{peer_name} voice-to-voice p50 ({where})", peer_stats[0], "ms", method,
                        extra={**extra, "p95_ms": peer_stats[1], "n": n}),
            BenchResult(f"{peer_name} voice-to-voice p95 ({where})", peer_stats[1], "ms", note),
        ]  # fmt: skip
    if ours_stats is not None:
        n = len(mine) - unanswered[ours_name]
        note = f"{same}; {n} of {len(mine)} answered; {_stage_note(mine)}"
        rows += [
            BenchResult(f"{ours_name} voice-to-voice p50 ({where})", ours_stats[0], "ms", note,
                        extra={"p95_ms": ours_stats[1], "n": n}),
            BenchResult(f"{ours_name} voice-to-voice p95 ({where})", ours_stats[1], "ms", same),
        ]  # fmt: skip
    if ours_stats is not None and peer_stats is not None:
        read = f"the rows above, side by side in this run; below 1: {ours_name} answers sooner"
        for label, index in (("p50", 0), ("p95", 1)):
            ratio = ours_stats[index] / peer_stats[index]
            rows.append(BenchResult(f"{ours_name} / {peer_name} voice-to-voice {label}", ratio,
                                    "x", read))  # fmt: skip
    return rows
