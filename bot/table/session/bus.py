"""``SessionEvents``: where a table's parts tell what happened, and who hears it.

Listeners (transcript writers, the Discord cog, rehearsal) hear session events; watchers (live
displays such as the DM's console) hear those and the live ones too (partials, who speaks). A
listener that raises is logged and the others still hear the event: one broken display must
not stop the table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.table.session.trace import TurnTrace

if TYPE_CHECKING:
    from bot.table.session.events import LiveEvent, SessionEvent
    from campaigns.basics import Tier

__all__ = ["SessionEvents", "TurnNumbers"]

log = logging.getLogger(__name__)


class SessionEvents:
    """The table's event fan-out (an ``EventSink``); called on the session's loop."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[SessionEvent], None]] = []
        self.watchers: list[Callable[[SessionEvent | LiveEvent], None]] = []
        """Live displays: every event plus the live ones; they must return at once."""

    def emit(self, event: SessionEvent) -> None:
        """A session event to every listener, then to the live displays."""
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("session listener failed on %s", type(event).__name__)
        self.show(event)

    def show(self, event: SessionEvent | LiveEvent) -> None:
        """An event for the live displays only."""
        for watcher in self.watchers:
            try:
                watcher(event)
            except Exception:
                log.exception("session watcher failed on %s", type(event).__name__)


class TurnNumbers:
    """Numbers the table's NPC turns in the order they are queued (a ``TraceMaker``)."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self, npc: str, speaker: str, text: str, tier: Tier, reason: str) -> TurnTrace:
        self.last += 1
        return TurnTrace(self.last, npc, speaker, text, tier.label, reason)
