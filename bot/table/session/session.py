"""``TableSession``: one per voice connection; owns every task of the table and its parts.

Flow: ``push_frame`` -> a ``SpeakerLane`` per speaker (``lanes``, created on the first frame)
-> lane events -> the ``router``: partials feed the tier selector and a speculative entity
lookup; a judged pause may start the answer speculatively; finals go through address detection
to a per-NPC turn queue (``turns``: engine -> sentences -> TTS -> the NPC's mixer handle).
Barge-in cancels the engine turn and records only the words played; ``follow_up`` puts each
answer into the scene and memory, and an answer naming another NPC may get its short reaction
(``reactions``). The DM steers through ``controls`` (and by ``voice``). One ``CpuScheduler``
orders the table's CPU work: the end of a speaker's turn, then the answering NPC's voice, then
partials. Each part is given what it uses; ``seams`` says what one may ask of another;
``builder.build_session`` builds the parts and this class only puts them together.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.table.session.characters import Binding
from bot.table.session.status import TableStatus, table_status
from bot.table.session.table_parts import TableParts
from campaigns.basics import GlyphoxaError
from npcs.context import SceneLine
from npcs.engines import Engine
from npcs.schema import NpcDefinition

if TYPE_CHECKING:
    from bot.table.session.spend import SpendMeter
    from tools.host import ToolHost

__all__ = ["EngineResolver", "TableSession"]

log = logging.getLogger(__name__)

#: NPC definition -> the engine that answers for it (None: speak nothing but ``say`` lines).
EngineResolver = Callable[[NpcDefinition], Engine | None]


class TableSession:
    """The whole table pipeline for one voice connection (Discord or rehearsal).

    It owns the table's tasks and its parts, each a small object given what it uses: the
    speakers' ``lanes``, the ``router`` (words -> turns), the NPC ``turns``, ``reactions``,
    the DM's ``controls`` and ``voice`` commands, and what follows each answer. Front ends
    steer it through ``controls`` and hear it through ``listeners`` and ``watchers``.
    Built by ``bot.table.session.builder.build_session`` (``open_table`` from ``glyphoxa.yaml``).
    """

    def __init__(
        self, parts: TableParts, *, title: str | None = None, resume_memory: str | None = None
    ) -> None:
        """Put together from ``parts``; ``resume_memory``: a memory session to continue (a
        table resumed after a restart) instead of a new one."""
        self.parts = parts
        self.config, self.metrics, self.memory = parts.config, parts.metrics, parts.memory
        cast, record, voices, answers, desk = (
            parts.cast, parts.record, parts.voices, parts.answers, parts.desk
        )  # fmt: skip
        self.campaign, self.addressing, self.tiers = cast.campaign, cast.addressing, cast.tiers
        self.seats = cast.seats
        self.scene_log, self.recorder, self.events = record.scene, record.recorder, record.events
        self.listeners, self.watchers = self.events.listeners, self.events.watchers
        self.lanes, self.mixer, self.barge_in = voices.lanes, voices.mixer, voices.barge_in
        self.scheduler = voices.scheduler
        self.router, self.turns, self.reactions = answers.router, answers.turns, answers.reactions
        self.follow_up, self.prefiller, self.entities = (
            answers.follow_up, answers.prefiller, answers.entities
        )  # fmt: skip
        self.trouble, self.traces = answers.trouble, answers.traces
        self.controls, self.voice, self.npc_reload = desk.controls, desk.voice, desk.npc_reload
        self.characters = desk.characters
        self.tools: ToolHost | None = None
        """The tool host serving this table (set by ``open_table``; for ``/tools``)."""
        self.spend: SpendMeter | None = None
        """The night's cost (set by ``open_table``)."""
        self.warm_up: asyncio.Task[None] | None = None
        """The LLM prompt-cache warm-up running in the background (set by ``open_table``)."""
        self._title, self._resume_memory = title, resume_memory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._started = False
        self._stopped = False

    # --- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the memory session and start hot reload; call on the loop that pushes frames."""
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        await self.recorder.start(self._title, resume=self._resume_memory)
        await self.characters.load()
        self.npc_reload.names_changed()
        self.npc_reload.open()
        if self.config.campaign.hot_reload:
            self.parts.tasks.spawn(self.npc_reload.watch(), "table:hot-reload")
        self._started = True

    async def stop(self) -> None:
        """Cancel every task, cut every voice, close lanes and end the memory session."""
        if self._stopped:
            return
        self._stopped = True
        self.npc_reload.close()
        for turn in self.turns.running():
            if turn.trace not in self.traces:
                turn.trace.error = turn.trace.error or "cut off: the session ended"
                turn.trace.spoken = turn.handle.played_text
                turn.trace.playback_start = turn.handle.playback_started_at
                self.traces.append(turn.trace)
        for speaker in self.lanes:
            speaker.drop_speculation()
        self.mixer.cancel_all()
        await self.prefiller.aclose()
        await self.lanes.aclose()
        await self.parts.tasks.cancel_all()
        self.metrics.active_speakers.set(0)
        self.entities.close()
        await self.recorder.stop()

    async def __aenter__(self) -> TableSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def end_input(self) -> None:
        """No more audio from anyone: lanes emit their last finals, then their tasks end."""
        await self.lanes.end_input()

    @property
    def busy(self) -> bool:
        """An NPC turn is queued, thinking or speaking."""
        return self.mixer.busy or self.turns.busy()

    @property
    def listening(self) -> bool:
        """A player is speaking, or an utterance's final transcript is still being made."""
        return self.lanes.listening

    @property
    def scene(self) -> list[SceneLine]:
        """The table's recent lines (players' finals, NPCs' voiced answers), oldest first."""
        return self.scene_log.lines

    async def wait_idle(self, timeout_s: float = 60.0, poll_s: float = 0.02) -> bool:
        """Until no NPC turn is pending (True) or the timeout (False). For rehearsal and tests."""
        deadline = time.monotonic() + timeout_s
        while self.busy:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(poll_s)
        return True

    def status(self) -> TableStatus:
        """A snapshot for the DM: NPCs, speakers, overrides, recent latency."""
        return table_status(self)

    # --- players -----------------------------------------------------------------------------
    def push_frame(self, speaker_id: str | int, user_name: str, frame: bytes) -> None:
        """One 20 ms 48 kHz stereo s16le frame of one speaker; safe from any thread."""
        if self._stopped:
            return
        if self._loop is None:
            raise GlyphoxaError("TableSession.start() must be awaited before pushing audio")
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self._push, str(speaker_id), user_name, frame)
        else:
            self._push(str(speaker_id), user_name, frame)

    def hear_frames(self, speaker_id: str | int, frames: Sequence[bytes]) -> bool:
        """Socket thread: a speaker's 20 ms 16 kHz mono frames through their open lane, right
        here (:mod:`bot.audio.speech.lane_feed`). False: no open lane, so ``push_frame`` them."""
        return not self._stopped and self.lanes.hear(str(speaker_id), frames)

    async def bind_character(
        self, user_id: str | int, character: str, *, bound_by: str | None = None
    ) -> Binding:
        """``/iam``: the player ``user_id`` plays ``character`` from now on (and at the
        campaign's next sessions); GlyphoxaError says why a name is refused."""
        return await self.parts.desk.casting.bind_character(user_id, character, bound_by=bound_by)

    async def unbind_character(self, user_id: str | int) -> Binding | None:
        """Forget the table's binding of ``user_id``; returns what binds them now."""
        return await self.parts.desk.casting.unbind_character(user_id)

    def scene_for(self, speaker: str) -> list[SceneLine]:
        """The scene as ``speaker`` had heard it when their current line began."""
        began = next((s.clock.wall_at(s.onset) for s in self.lanes if s.name == speaker), None)
        return self.scene_log.heard_by(speaker, began)

    def engine_for(self, npc: NpcDefinition) -> Engine | None:
        """The engine that answers for ``npc`` at this table (None: it only speaks lines)."""
        return self.parts.answers.engines(npc)

    def _push(self, speaker_id: str, user_name: str, frame: bytes) -> None:
        if not self._stopped:
            name = self.characters.name_for(speaker_id, user_name)
            self.lanes.push(speaker_id, name, frame, display_name=user_name)
