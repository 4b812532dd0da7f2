"""The turn request an engine receives and the typed events it streams back."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from campaigns.basics import AudioChunk, Tier
from npcs.context import SceneLine
from npcs.schema import NpcDefinition

if TYPE_CHECKING:
    from tools.host import TurnToolReport

__all__ = [
    "Caption",
    "Engine",
    "EngineEvent",
    "Filler",
    "FirstToken",
    "Sentence",
    "ToolsUsed",
    "TurnDone",
    "TurnRequest",
]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One NPC turn: who spoke, what they said, at which effective tier, in which scene."""

    npc: NpcDefinition
    speaker: str
    text: str
    tier: Tier
    scene: Sequence[SceneLine] = ()
    entity_snapshot: str | None = None
    audio: bytes | None = None
    """Realtime engine only: the player's utterance as 24 kHz mono s16le (else text is sent)."""
    played_ms: Callable[[], float] | None = None
    """Realtime engine only: how much of this turn's audio reached the speakers so far; used to
    truncate the server's transcript on barge-in. None: estimated from wall-clock time."""
    direction: str | None = None
    """The DM's private direction for this answer (``TableSession.direct``): it joins this
    turn's prompt and nothing else (never the scene, the transcript or memory)."""
    confirmed: Callable[[], Awaitable[object]] | None = None
    """A speculative turn (started on a partial transcript): awaited before any tool that is not
    read-only runs, so a guess that is dropped changes nothing (no file written, no music)."""
    reacting_to: str | None = None
    """A reaction: the NPC whose words (``text``) this NPC reacts to, because they named it;
    ``speaker`` is then the player whose turn it belongs to."""
    notes: str = ""
    """What the table did before the model speaks (a roll, what the NPC recalls), for an engine
    that tells its model through the request (realtime; ``npcs.engines.table_actions``)."""


@dataclass(frozen=True, slots=True)
class FirstToken:
    """The model produced its first output (text or audio): the turn's first-token latency."""

    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A complete sentence to speak now in the NPC's voice."""

    text: str


@dataclass(frozen=True, slots=True)
class Filler:
    """A short in-voice line covering slow tools ("Let me check my notes...")."""

    text: str


@dataclass(frozen=True, slots=True)
class Caption:
    """The words of the audio a speech-to-speech engine yielded so far in this turn (its
    running transcript), so what the players heard goes into the scene and memory even when
    they cut the NPC off before the turn's ``TurnDone``."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolsUsed:
    """One round of tool calls and what it cost (``report`` is a ``TurnToolReport``)."""

    report: TurnToolReport


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The turn finished; ``text`` is everything the NPC said (fillers excluded)."""

    text: str
    engine: str = ""
    """Which engine actually answered (realtime turns may fall back to cascaded)."""
    budget_words: int | None = None
    """The answer's spoken budget in words (None: the engine sets none)."""
    budget_hit: bool = False
    """The answer was cut at its spoken budget (``npcs.spoken_budget``)."""
    repairs: tuple[tuple[str, int], ...] = ()
    """What clean speech did to the answer, by kind (``npcs.clean_speech.REPAIR_KINDS``)."""


EngineEvent = FirstToken | Sentence | Filler | AudioChunk | Caption | ToolsUsed | TurnDone


@runtime_checkable
class Engine(Protocol):
    """Answers one turn as a stream of events. Cancel the consuming task to barge in: nothing
    is yielded after that, and remote work is cancelled."""

    def respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]: ...
