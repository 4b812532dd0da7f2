"""Tell the DM, once, when part of the table cannot work: an NPC turn that failed, the local
LLM server crashing and coming back, a voice that broke so espeak-ng spoke instead. Each
distinct reason is said once (again only after ``repeat_after_s``), so a dead server is one
line in the transcript, not one per turn."""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.table.session.events import SessionEvent, TableAlert
from bot.table.session.trace import TurnTrace
from bot.telemetry.metrics import Metrics
from campaigns.providers.voices import VoiceSettings

__all__ = ["TroubleDesk"]


class TroubleDesk:
    """Turns failures into :class:`TableAlert` events for the transcript and the report."""

    def __init__(
        self, emit: Callable[[SessionEvent], None], metrics: Metrics, repeat_after_s: float = 300.0
    ) -> None:
        self._emit = emit
        self._metrics = metrics
        self._repeat_after_s = repeat_after_s
        self._said: dict[str, float] = {}
        self.alerts: list[TableAlert] = []

    def turn_failed(self, trace: TurnTrace) -> None:
        """An NPC turn failed (``trace.error``): say who could not answer and why."""
        if not trace.error:
            return
        self._metrics.failures.labels("npc_turn").inc()
        instead = f' (said "{trace.fallback}" instead)' if trace.fallback else ""
        self._say(trace.error, f"{trace.npc} could not answer{instead}: {trace.error}", trace.npc)

    def voice_failed(self, voice: VoiceSettings, reason: str) -> None:
        """A configured voice broke while the table runs; espeak-ng spoke instead."""
        self._metrics.failures.labels("tts").inc()
        name = f"{voice.provider} voice {voice.voice or '(default)'}"
        self._say(
            f"tts:{name}:{reason}", f"the {name} failed ({reason}); espeak-ng spoke instead", None
        )

    def part_changed(self, part: str, reason: str | None, message: str) -> None:
        """A supervised part (``llm_server``) went down (``reason``) or came back (None)."""
        if reason is not None:
            self._metrics.failures.labels(part).inc()
            self._say(reason, message, None)
        else:
            self._said.clear()  # the next failure is news again
            self._say(message, message, None)

    def tell(self, key: str, message: str) -> None:
        """Something the DM must know that is not a failure (the night's spending limits)."""
        self._say(key, message, None)

    def _say(self, key: str, message: str, npc: str | None) -> None:
        now = time.monotonic()
        said = self._said.get(key)
        if said is not None and now - said < self._repeat_after_s:
            return
        self._said[key] = now
        alert = TableAlert(message, npc, now)
        self.alerts.append(alert)
        self._emit(alert)
