"""What the console shows of a table, as plain values the templates render.

Everything here reads the session's events and traces; nothing is kept that the table needs.
A turn's stages are grouped the way a DM thinks of them (endpointing, recognition, queue, LLM
to the first sentence, TTS, playback) and drawn to scale as one bar.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.table.session.trace import TurnTrace
from campaigns.basics import percentile

__all__ = [
    "STAGE_GROUPS",
    "Segment",
    "TurnView",
    "dom_id",
    "group_stages",
    "latency_stats",
    "stage_stats",
    "turn_state",
    "turn_view",
]

#: Stage group -> the trace stages it sums (``bot.table.session.trace.STAGES``), in pipeline order.
STAGE_GROUPS: dict[str, tuple[str, ...]] = {
    "endpointing": ("endpoint",),
    "recognition": ("stt_final",),
    "queue": ("queue", "route"),
    "LLM first sentence": ("llm_first_token", "first_sentence"),
    "TTS": ("tts_first_audio",),
    "playback": ("to_playback",),
}
_BAR_FLOOR_MS = 1500.0
"""A bar is drawn against at least this many milliseconds, so fast turns look fast."""


def dom_id(prefix: str, name: str) -> str:
    """A stable, markup-safe element id for a name (NPC and player names may hold anything)."""
    return f"{prefix}-{hashlib.sha1(name.encode()).hexdigest()[:12]}"


@dataclass(frozen=True, slots=True)
class Segment:
    """One stage of a latency bar: its share of the bar (0-100) and its milliseconds."""

    stage: str
    css: str
    ms: float
    x: float
    width: float


@dataclass(slots=True)
class TurnView:
    """One NPC turn as its card shows it."""

    turn_id: int
    npc: str
    speaker: str
    heard: str
    said: str
    tier: str
    tier_reason: str
    address_reason: str
    state: str
    interrupted: bool
    error: str | None
    fallback: str | None
    speculative: bool
    tools: list[dict[str, Any]]
    segments: list[Segment] = field(default_factory=list)
    voice_to_voice_ms: float | None = None
    dom: str = ""
    budget_words: int | None = None
    budget_hit: bool = False
    repairs: dict[str, int] = field(default_factory=dict)
    """What clean speech did to the answer, by kind."""


def grouped_stages(trace: TurnTrace) -> dict[str, float | None]:
    """The trace's stages summed into :data:`STAGE_GROUPS` (None where nothing was measured)."""
    return group_stages(trace.stages_ms())


def group_stages(stages: Mapping[str, float | None]) -> dict[str, float | None]:
    """Stage milliseconds (``TurnTrace.stages_ms``, or as memory kept them) by stage group."""
    out: dict[str, float | None] = {}
    for group, names in STAGE_GROUPS.items():
        values = [stages[name] for name in names if stages.get(name) is not None]
        out[group] = round(sum(v for v in values if v is not None), 1) if values else None
    return out


def turn_state(trace: TurnTrace) -> str:
    """Where a turn is: queued, thinking, speaking (its first audio exists) or done."""
    if trace.done is not None:
        return "done"
    if trace.first_audio is not None:
        return "speaking"
    if trace.dequeued is not None:
        return "thinking"
    return "queued"


def turn_view(trace: TurnTrace) -> TurnView:
    """The card of ``trace``, with its latency bar laid out."""
    grouped = grouped_stages(trace)
    total = sum(v for v in grouped.values() if v is not None)
    scale = max(total, _BAR_FLOOR_MS)
    segments = []
    x = 0.0
    for index, (group, ms) in enumerate(grouped.items()):
        if ms is None or ms <= 0:
            continue
        width = 100.0 * ms / scale
        segments.append(Segment(group, f"s{index}", ms, round(x, 2), round(width, 2)))
        x += width
    tools = [
        {
            "name": tool.name,
            "status": tool.status,
            "ms": tool.duration_ms,
            "arguments": tool.arguments,
            "result": tool.result,
            "approval": tool.approval,
        }
        for tool in trace.tools
    ]
    return TurnView(
        turn_id=trace.turn_id,
        npc=trace.npc,
        speaker=trace.speaker,
        heard=trace.heard,
        said=trace.spoken or trace.reply,
        tier=trace.tier,
        tier_reason=trace.tier_reason,
        address_reason=trace.address_reason,
        state=turn_state(trace),
        interrupted=trace.interrupted,
        error=trace.error,
        fallback=trace.fallback,
        speculative=trace.speculative,
        tools=tools,
        segments=segments,
        voice_to_voice_ms=trace.stages_ms()["voice_to_voice"],
        dom=f"turn-{trace.turn_id}",
        budget_words=trace.budget_words,
        budget_hit=trace.budget_hit,
        repairs=dict(trace.repairs),
    )


def latency_stats(traces: Sequence[TurnTrace]) -> dict[str, Any]:
    """Running p50/p95 of every stage group and of voice to voice, over answered player turns,
    plus the per-turn series the chart draws."""
    answered = [t for t in traces if t.heard and t.playback_start is not None]
    return stage_stats([(t.turn_id, t.stages_ms()) for t in answered])


def stage_stats(turns: Sequence[tuple[int, Mapping[str, float | None]]]) -> dict[str, Any]:
    """:func:`latency_stats` of (turn number, stage milliseconds) pairs."""
    rows: list[dict[str, Any]] = []
    columns: dict[str, list[float]] = {group: [] for group in STAGE_GROUPS}
    columns["voice to voice"] = []
    for _turn, stages in turns:
        for group, ms in group_stages(stages).items():
            if ms is not None:
                columns[group].append(ms)
        v2v = stages.get("voice_to_voice")
        if v2v is not None:
            columns["voice to voice"].append(v2v)
    for name, values in columns.items():
        if values:
            rows.append(
                {
                    "stage": name,
                    "p50": round(percentile(values, 50)),
                    "p95": round(percentile(values, 95)),
                    "n": len(values),
                }
            )
    return {"rows": rows, "turns": len(turns), "series": chart_series(turns)}


def chart_series(turns: Iterable[tuple[int, Mapping[str, float | None]]]) -> dict[str, list[Any]]:
    """Per turn: its number and each stage group's milliseconds (0 where unmeasured)."""
    series: dict[str, list[Any]] = {"turn": []}
    for group in STAGE_GROUPS:
        series[group] = []
    for turn, stages in turns:
        series["turn"].append(turn)
        for group, ms in group_stages(stages).items():
            series[group].append(ms or 0)
    return series
