"""The narrow seams between the parts of a ``TableSession``.

Each part (routing, reactions, the DM's controls, DM voice commands, what follows an answer)
is a small object that receives what it uses when it is built; these Protocols say exactly what
one part may ask of another, so a part can be read, and tested, knowing only them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.table.session.events import LiveEvent, SessionEvent
    from bot.table.session.speakers import Speaker
    from bot.table.session.trace import TurnTrace
    from campaigns.basics import Tier
    from npcs.dm_voice import DmVoiceCommand

__all__ = ["DmVoice", "EventSink", "NpcGate", "ReactionDropper", "Steering", "TraceMaker"]


class EventSink(Protocol):
    """Where a part tells the table what happened."""

    def emit(self, event: SessionEvent) -> None:
        """A session event: listeners (transcripts, the cog) and live displays hear it."""

    def show(self, event: SessionEvent | LiveEvent) -> None:
        """A live event, for live displays only (the DM's console)."""


class TraceMaker(Protocol):
    """Numbers the table's NPC turns: each queued turn gets the next trace."""

    def __call__(self, npc: str, speaker: str, text: str, tier: Tier, reason: str) -> TurnTrace:
        """The trace of a new turn of ``npc`` answering ``speaker``'s ``text``."""
        ...


class NpcGate(Protocol):
    """What the DM has ordered that every answer obeys (the NPCs' seats, ``TableSeats``)."""

    def is_muted(self, npc: str) -> bool:
        """``npc`` (or every NPC) is muted: it answers nothing."""
        ...

    def has_direction(self, npc: str) -> bool:
        """``npc`` has a private direction waiting for its next answer."""
        ...

    def brief(self, npc: str, *, take: bool) -> str | None:
        """What the DM asks of ``npc``'s next answer, for its prompt; ``take``: the answer
        starts now (it counts one turn of a direction), else a look ahead."""
        ...

    def give_back(self, npc: str) -> None:
        """``npc``'s last turn was dropped unheard: its direction gets that turn back."""


class ReactionDropper(Protocol):
    """Drops a reaction that players have not heard yet."""

    def drop(self, why: str) -> None:
        """Drop the pending reaction (logged with ``why``) unless it already plays."""


class Steering(Protocol):
    """The DM controls a voice command applies (``DmControls``)."""

    def obey(self, command: DmVoiceCommand, *, heard: str, override_minutes: float) -> None:
        """Apply ``command`` as the control it names (GlyphoxaError: it cannot be)."""


class DmVoice(Protocol):
    """What routing asks about the DM's voice (``VoiceCommands``)."""

    def is_dm(self, speaker: Speaker) -> bool:
        """Whether this voice lane is the DM's."""
        ...

    def private_words(self, speaker: Speaker, text: str) -> bool:
        """Whether ``text`` is, or begins, the DM's private direction (shown nowhere)."""
        ...

    def apply(self, speaker: Speaker, text: str) -> DmVoiceCommand | None:
        """Apply ``text`` if it is a DM voice command from the DM's lane."""
        ...
