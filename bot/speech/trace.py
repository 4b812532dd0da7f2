"""Per-turn latency trace: when each stage of one player -> NPC turn happened.

A ``TurnTimer`` is filled in as the turn progresses (``mark("first_sentence")``); ``freeze()``
yields the immutable ``TurnTrace`` event that metrics, the rehearsal report and logs consume.
``TraceLog`` keeps the recent ones and answers percentile questions per stage.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

from campaigns.basics import percentile

__all__ = ["STAGES", "Stage", "TraceLog", "TurnTimer", "TurnTrace"]

log = logging.getLogger(__name__)

Stage = Literal[
    "speech_end",
    "final_transcript",
    "tier_decision",
    "first_llm_token",
    "first_sentence",
    "first_tts_audio",
    "playback_start",
]
STAGES: tuple[Stage, ...] = get_args(Stage)
"""The stages in the order a turn reaches them."""


@dataclass(frozen=True, slots=True)
class TurnTrace:
    """Monotonic timestamps (seconds) of one turn's stages; ``None`` if a stage never happened."""

    turn_id: str
    speaker: str
    npc: str | None
    tier: str | None
    speech_end: float | None = None
    final_transcript: float | None = None
    tier_decision: float | None = None
    first_llm_token: float | None = None
    first_sentence: float | None = None
    first_tts_audio: float | None = None
    playback_start: float | None = None
    interrupted: bool = False

    def since_speech_end_ms(self) -> dict[str, float]:
        """Each reached stage as milliseconds after ``speech_end`` (the player's perceived wait)."""
        if self.speech_end is None:
            return {}
        out: dict[str, float] = {}
        for stage in STAGES[1:]:
            value = getattr(self, stage)
            if value is not None:
                out[stage] = (value - self.speech_end) * 1000.0
        return out

    @property
    def response_ms(self) -> float | None:
        """Speech end -> NPC audio audible: the number the product promises."""
        return self.since_speech_end_ms().get("playback_start")


@dataclass(slots=True)
class TurnTimer:
    """Mutable builder of a ``TurnTrace``; the first mark of each stage wins."""

    turn_id: str
    speaker: str
    npc: str | None = None
    tier: str | None = None
    clock: Callable[[], float] = time.monotonic
    marks: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False

    def mark(self, stage: Stage, at: float | None = None) -> None:
        if stage not in STAGES:
            raise ValueError(f"unknown trace stage {stage!r}")
        self.marks.setdefault(stage, self.clock() if at is None else at)

    def freeze(self) -> TurnTrace:
        return TurnTrace(
            turn_id=self.turn_id,
            speaker=self.speaker,
            npc=self.npc,
            tier=self.tier,
            interrupted=self.interrupted,
            **{stage: self.marks.get(stage) for stage in STAGES},
        )


class TraceLog:
    """The most recent traces (bounded) with per-stage percentiles for metrics and reports."""

    def __init__(self, maxlen: int = 500) -> None:
        self._traces: deque[TurnTrace] = deque(maxlen=maxlen)

    def add(self, trace: TurnTrace) -> None:
        self._traces.append(trace)
        log.debug("turn %s: %s", trace.turn_id, trace.since_speech_end_ms())

    def __len__(self) -> int:
        return len(self._traces)

    def traces(self) -> list[TurnTrace]:
        return list(self._traces)

    def percentile_ms(self, stage: Stage, q: float) -> float | None:
        samples = [
            ms[stage] for ms in (t.since_speech_end_ms() for t in self._traces) if stage in ms
        ]
        return percentile(samples, q) if samples else None
