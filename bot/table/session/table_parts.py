"""What a ``TableSession`` is put together from (``bot.table.session.builder`` builds it).

Beside the ``Cast`` and the ``Record`` (``parts``): ``Voices``, the players' lanes in, the mixer
out, barge-in and the CPU's order; ``Answers``, from a routed line to a voiced answer and what
follows it; ``DmDesk``, what the DM steers with; ``TableTasks``, every task the table owns.
``TableParts`` holds them all.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.audio.speech import BargeInController, Mixer
    from bot.audio.speech.scheduler import CpuScheduler
    from bot.settings.config import GlyphoxaConfig
    from bot.table.session.alerts import TroubleDesk
    from bot.table.session.characters import CharacterControls, CharacterRoster
    from bot.table.session.controls import DmControls
    from bot.table.session.entities import EntityLookup
    from bot.table.session.follow_up import AnswerFollowUp
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.npc_reload import NpcReloader
    from bot.table.session.parts import Cast, Record
    from bot.table.session.prefill import Prefiller
    from bot.table.session.reactions import Reactions
    from bot.table.session.routing import Router
    from bot.table.session.speakers import SpeakerLanes
    from bot.table.session.trace import TurnTrace
    from bot.table.session.voice_commands import VoiceCommands
    from bot.telemetry.metrics import Metrics
    from npcs.engines import Engine
    from npcs.schema import NpcDefinition

__all__ = ["Answers", "DmDesk", "TableParts", "TableTasks", "Voices"]


@dataclass(frozen=True, slots=True)
class Voices:
    """The table's audio: players' lanes in, the mixer out."""

    lanes: SpeakerLanes
    """A lane per speaker: VAD, end of turn, streaming STT."""
    mixer: Mixer
    """NPC voices and ambience out."""
    barge_in: BargeInController
    """A player talking over an NPC cuts it (once confirmed)."""
    scheduler: CpuScheduler
    """Orders the table's CPU work (a turn's end, then the answer's voice, then partials)."""


@dataclass(frozen=True, slots=True)
class Answers:
    """From a player's line to a voiced answer, and what follows it."""

    router: Router
    """Words -> NPC turns."""
    turns: NpcQueues
    """Each NPC's queue and worker: engine, sentences, TTS, its mixer handle."""
    reactions: Reactions
    """An NPC named in an answer may add one short line."""
    follow_up: AnswerFollowUp
    """After an answer: the scene, memory, metrics, a reaction or the reply's prefill."""
    prefiller: Prefiller
    """Evaluates NPC prompts ahead of their turns (a local LLM's prompt cache)."""
    entities: EntityLookup
    """Campaign entities looked up for prompts."""
    trouble: TroubleDesk
    """Failures the DM is told about (a failed turn, a crashed model server)."""
    traces: list[TurnTrace]
    """Every turn's stages, in the order they ended."""
    engines: Callable[[NpcDefinition], Engine | None]
    """The engine that answers for an NPC (None: it only speaks lines)."""


@dataclass(frozen=True, slots=True)
class DmDesk:
    """What the DM steers the table with."""

    controls: DmControls
    """Tiers, mute, ``say``, private directions, moods, reload."""
    voice: VoiceCommands
    """Who the DM is, their voice commands and private words."""
    npc_reload: NpcReloader
    """NPC file edits and new names reach the table."""
    characters: CharacterRoster
    """Who plays whom (``/iam``, campaign.yaml)."""
    casting: CharacterControls
    """Binds and unbinds players' characters at the table."""


class TableTasks:
    """Every task one table owns: each is named and kept until it ends; ``cancel_all`` ends
    the rest (the session's ``stop``)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coroutine`` as the table's task ``name``."""
        task = asyncio.create_task(coroutine, name=name)
        self.adopt(task)
        return task

    def adopt(self, task: asyncio.Task[Any]) -> None:
        """The table owns ``task``: ``cancel_all`` cancels it."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def cancel_all(self, timeout_s: float = 5.0) -> None:
        """Cancel every task the table owns and wait for them (at most ``timeout_s``)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout_s)


@dataclass(frozen=True, slots=True)
class TableParts:
    """Everything a ``TableSession`` is put together from."""

    config: GlyphoxaConfig
    metrics: Metrics
    memory: Any
    """The campaign memory store (None: a table without memory)."""
    cast: Cast
    record: Record
    voices: Voices
    answers: Answers
    desk: DmDesk
    tasks: TableTasks
