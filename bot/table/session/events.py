"""What a table session reports as it runs (transcript lines, routing, barge-ins, turns).

Listeners (the rehearsal runner, the Discord cog's live transcript) get these in order on the
event loop. Watchers (the DM's console) get them too, plus :data:`LiveEvent` s: what is
happening right now (words as they form, who speaks, a turn queued, an NPC file reloaded), at a
higher rate and with nothing a report or saved state needs. Times are ``time.monotonic()``
seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.table.session.trace import TurnTrace

__all__ = [
    "BargedIn",
    "DmAction",
    "LiveEvent",
    "NpcReloaded",
    "NpcSpoke",
    "PlayerPartial",
    "PlayerSpoke",
    "Routed",
    "SessionEvent",
    "SpeakingChanged",
    "TableAlert",
    "TurnEnded",
    "TurnQueued",
]


@dataclass(frozen=True, slots=True)
class PlayerSpoke:
    """A player's final transcript (a turn candidate)."""

    speaker: str
    text: str
    speech_start: float | None
    speech_end: float | None
    at: float


@dataclass(frozen=True, slots=True)
class Routed:
    """Address detection and tier decision for one final."""

    speaker: str
    text: str
    npcs: tuple[str, ...]
    reason: str
    tier: str | None
    tier_reason: str | None
    at: float


@dataclass(frozen=True, slots=True)
class NpcSpoke:
    """An NPC turn ended: ``trace.spoken`` is what players heard."""

    trace: TurnTrace
    at: float


@dataclass(frozen=True, slots=True)
class BargedIn:
    speaker: str
    npc: str
    heard: str
    at: float


@dataclass(frozen=True, slots=True)
class DmAction:
    """The DM steered the table (slash command, rehearsal script or voice command)."""

    action: str
    detail: str
    at: float
    heard: str | None = None
    """For a DM voice command: who said it and the words as transcribed."""
    by: str | None = None
    """Where the DM steered from when not by voice (``console``); None: a slash command or a
    rehearsal's script."""


@dataclass(frozen=True, slots=True)
class TableAlert:
    """Something the DM must know, in one line with its fix: an NPC that cannot speak, a model
    server that crashed or came back. ``npc`` is None for the whole table."""

    message: str
    npc: str | None
    at: float


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A player's turn was declared over (every utterance, answered or not): how long after
    their last word, and why."""

    speaker: str
    speech_start: float | None
    speech_end: float | None
    """When the last voiced audio arrived (wall clock)."""
    reason: str
    """``sounds finished``, ``sounds unfinished``, ``a name alone``, ``hangover``, ..."""
    silence_ms: float
    """Silence heard after the last word before the turn ended (audio time)."""
    at: float


SessionEvent = PlayerSpoke | Routed | NpcSpoke | BargedIn | DmAction | TableAlert | TurnEnded


@dataclass(frozen=True, slots=True)
class PlayerPartial:
    """A talking player's words so far (replaced by the next partial, then by the final)."""

    speaker: str
    text: str
    at: float


@dataclass(frozen=True, slots=True)
class SpeakingChanged:
    """A player started or stopped talking (voice activity, not yet words)."""

    speaker: str
    speaking: bool
    at: float


@dataclass(frozen=True, slots=True)
class TurnQueued:
    """An NPC turn was queued: ``trace`` says who addressed it, why, and at which tier; the
    same trace arrives filled in with ``NpcSpoke`` when the turn ends."""

    trace: TurnTrace
    at: float


@dataclass(frozen=True, slots=True)
class NpcReloaded:
    """An NPC file changed while the table runs (hot reload): ``kind`` is ``added``,
    ``updated``, ``removed`` or ``invalid`` (the last good version stays; ``issues`` say why)."""

    name: str | None
    kind: str
    file: str
    issues: tuple[str, ...]
    at: float


LiveEvent = PlayerPartial | SpeakingChanged | TurnQueued | NpcReloaded
