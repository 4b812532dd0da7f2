"""``TableSession``: one per voice connection; owns every task of the table and its parts.

Flow: ``push_frame`` -> a ``SpeakerLane`` per speaker (``lanes``, created on the first frame)
-> lane events -> the ``router``: partials feed the tier selector and a speculative entity
lookup; a judged pause may start the answer speculatively; finals go through address detection
to a per-NPC turn queue (``turns``: engine -> sentences -> TTS -> the NPC's mixer handle).
Barge-in cancels the engine turn and records only the words played; ``follow_up`` puts each
answer into the scene and memory, and an answer naming another NPC may get its short reaction
(``reactions``). The DM steers through ``controls`` (and by ``voice``). One ``CpuScheduler``
orders the table's CPU work: the end of a speaker's turn, then the answering NPC's voice, then
partials. Each part is given what it uses; ``seams`` says what one may ask of another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from bot.config import GlyphoxaConfig
from bot.metrics import METRICS, Metrics
from bot.session.alerts import TroubleDesk
from bot.session.bus import SessionEvents, TurnNumbers
from bot.session.characters import Binding, CharacterControls, CharacterRoster
from bot.session.controls import DmControls
from bot.session.early import EarlyAnswers
from bot.session.entities import EntityLookup
from bot.session.follow_up import AnswerFollowUp
from bot.session.npc_queue import NpcQueues
from bot.session.npc_reload import NpcReloader
from bot.session.parts import Cast, Record
from bot.session.prefill import Prefiller
from bot.session.reactions import Reactions
from bot.session.recorder import TranscriptRecorder
from bot.session.routing import Router
from bot.session.scene_log import SceneLog
from bot.session.seats import TableSeats
from bot.session.speakers import Speaker, SpeakerLanes
from bot.session.status import TableStatus, table_status
from bot.session.timing import TimedTts
from bot.session.trace import TurnTrace
from bot.session.turns import NpcTurn
from bot.session.voice_commands import VoiceCommands
from bot.speech import (
    BargeInController,
    LaneEvent,
    Mixer,
    SttProvider,
    TtsProvider,
    Vocabulary,
    VoiceRouter,
)
from bot.speech.endpointing import TurnModel
from bot.speech.scheduler import CpuScheduler
from campaigns.basics import GlyphoxaError, Tier
from npcs.addressing import AddressDetector
from npcs.campaign import Campaign
from npcs.context import SceneLine
from npcs.engines import Engine
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector

if TYPE_CHECKING:
    from bot.session.spend import SpendMeter
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
    """

    def __init__(
        self,
        *,
        config: GlyphoxaConfig,
        campaign: Campaign,
        stt: SttProvider,
        tts: TtsProvider,
        engines: EngineResolver,
        memory: Any = None,
        mixer: Mixer | None = None,
        metrics: Metrics = METRICS,
        dm_speakers: Iterable[str] = (),
        vad_factory: Callable[[], Any] | None = None,
        session_title: str | None = None,
        speculate: bool | Callable[[NpcDefinition, Tier], bool] = True,
        prefill: bool = False,
        memory_session_id: str | None = None,
        scheduler: CpuScheduler | None = None,
        turn_model: TurnModel | None = None,
    ) -> None:
        """``scheduler``: share one between tables in one process (default: the table's own);
        ``turn_model``: judges pauses (``speech.turn``); None: turns end after the hangover."""
        self.config = config
        self.campaign = campaign
        self.metrics = metrics
        self.mixer = mixer or Mixer(config.speech)
        self.memory = memory
        self.tools: ToolHost | None = None
        """The tool host serving this table (set by ``open_table``; for ``/tools``)."""
        self.spend: SpendMeter | None = None
        """The night's cost (set by ``open_table``)."""
        self.warm_up: asyncio.Task[None] | None = None
        """The LLM prompt-cache warm-up running in the background (set by ``open_table``)."""
        self.scheduler = scheduler or CpuScheduler()
        tts_timed = TimedTts(tts, metrics, self.scheduler)
        self._engines = engines
        self._title = session_title
        self._resume_memory = memory_session_id
        """A memory session to continue (a table resumed after a restart) instead of a new one."""
        self.events = SessionEvents()
        self.listeners = self.events.listeners
        self.watchers = self.events.watchers
        """Live displays (the DM's console): every event, plus the live ones (module
        ``events``); called on the loop, they must return at once and never raise."""
        new_trace = TurnNumbers()
        self.characters = CharacterRoster(campaign, memory)
        """Who plays whom: players are named by their character (``/iam``, campaign.yaml)."""
        self.addressing = AddressDetector(
            campaign.npcs,
            continuation_window_s=config.tiers.continuation_window_s,
            characters=self.characters.names(),
        )
        self.tiers = TierSelector(config.tiers)
        self.entities = EntityLookup(campaign, memory)
        self.recorder = TranscriptRecorder(memory, campaign.name)
        self.scene_log = SceneLog()
        self.traces: list[TurnTrace] = []
        self.trouble = TroubleDesk(self.events.emit, metrics)
        """Failures the DM is told about (a failed turn, a crashed model server)."""
        voices = tts if isinstance(tts, VoiceRouter) else None
        if voices is not None:  # a voice that breaks mid-table is told to the DM
            voices.on_fallback = self.trouble.voice_failed
        self.seats = TableSeats()
        """Each NPC at the table: the DM's orders for it (mute, direction), its turn queue."""
        self.lanes = SpeakerLanes(
            stt=stt,
            config=config.speech,
            metrics=metrics,
            vocabulary=Vocabulary.from_campaign(campaign, self.characters.names()),
            vad_factory=vad_factory,
            spawn=self._spawn,
            on_event=self._on_lane_event,
            scheduler=self.scheduler,
            turn_model=turn_model,
        )
        self.turns = NpcQueues(
            seats=self.seats,
            mixer=self.mixer,
            campaign=campaign,
            engines=engines,
            tts=tts_timed,
            scene=self.scene_for,
            spawn=self._spawn,
            on_done=self._turn_done,
            on_written=self._turn_written,
            scheduler=self.scheduler,
        )
        self.prefiller = Prefiller(engines, prefill)
        """Evaluates NPC prompts ahead of their turns (a local LLM's prompt cache)."""
        self.reactions = Reactions(
            campaign=campaign,
            addressing=self.addressing,
            turns=self.turns,
            lanes=self.lanes,
            engines=engines,
            seats=self.seats,
            events=self.events,
            new_trace=new_trace,
        )
        self.npc_reload = NpcReloader(
            campaign=campaign,
            addressing=self.addressing,
            characters=self.characters,
            lanes=self.lanes,
            voices=voices,
            events=self.events,
        )
        self.controls = DmControls(
            campaign=campaign,
            tiers=self.tiers,
            turns=self.turns,
            seats=self.seats,
            reactions=self.reactions,
            events=self.events,
            new_trace=new_trace,
            reload=self.npc_reload.apply_edits,
        )
        """What the DM steers: tiers, mute, ``say``, private directions, reload."""
        self.voice = VoiceCommands(
            config=config,
            campaign=campaign,
            mixer=self.mixer,
            turns=self.turns,
            controls=self.controls,
            new_trace=new_trace,
            mentions=self.addressing.mentions,
            dm_speakers=dm_speakers,
        )
        """The DM's voice: who the DM is, their voice commands and private words."""
        cast = Cast(campaign, self.addressing, self.tiers, self.seats)
        record = Record(self.scene_log, self.recorder, self.events, new_trace)
        early = EarlyAnswers(
            prefiller=self.prefiller,
            entities=self.entities,
            scene_for=self.scene_for,
            scheduler=self.scheduler,
            tts=tts_timed,
            adopt=self._adopt,
            speculate=speculate,
            resume_ms=float(config.speech.turn.pause_ms),
        )
        self.router = Router(
            cast=cast,
            record=record,
            turns=self.turns,
            lanes=self.lanes,
            entities=self.entities,
            dm=self.voice,
            reactions=self.reactions,
            early=early,
        )
        self.follow_up = AnswerFollowUp(
            campaign=campaign,
            turns=self.turns,
            tiers=self.tiers,
            scene=self.scene_log,
            prefiller=self.prefiller,
            recorder=self.recorder,
            reactions=self.reactions,
            events=self.events,
            trouble=self.trouble,
            metrics=metrics,
            traces=self.traces,
        )
        self.barge_in = BargeInController(
            self.mixer,
            confirm_ms=config.speech.barge_in_confirm_ms,
            backchannels=config.speech.backchannels,
            on_barge_in=self.router.on_barge_in,
        )
        self._casting = CharacterControls(
            roster=self.characters,
            lanes=self.lanes,
            addressing=self.addressing,
            names_changed=self.npc_reload.names_changed,
        )
        self._tasks: set[asyncio.Task[Any]] = set()
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
            self._spawn(self.npc_reload.watch(), "table:hot-reload")
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
        tasks = list(self._tasks)
        await self.lanes.aclose()
        for task in tasks:
            task.cancel()
        await _cancel_all(tasks)
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
        here (:mod:`bot.speech.lane_feed`). False: no open lane, so ``push_frame`` them."""
        return not self._stopped and self.lanes.hear(str(speaker_id), frames)

    async def bind_character(
        self, user_id: str | int, character: str, *, bound_by: str | None = None
    ) -> Binding:
        """``/iam``: the player ``user_id`` plays ``character`` from now on (and at the
        campaign's next sessions); GlyphoxaError says why a name is refused."""
        return await self._casting.bind_character(user_id, character, bound_by=bound_by)

    async def unbind_character(self, user_id: str | int) -> Binding | None:
        """Forget the table's binding of ``user_id``; returns what binds them now."""
        return await self._casting.unbind_character(user_id)

    def scene_for(self, speaker: str) -> list[SceneLine]:
        """The scene as ``speaker`` had heard it when their current line began."""
        began = next((s.clock.wall_at(s.onset) for s in self.lanes if s.name == speaker), None)
        return self.scene_log.heard_by(speaker, began)

    def engine_for(self, npc: NpcDefinition) -> Engine | None:
        """The engine that answers for ``npc`` at this table (None: it only speaks lines)."""
        return self._engines(npc)

    def _push(self, speaker_id: str, user_name: str, frame: bytes) -> None:
        if not self._stopped:
            name = self.characters.name_for(speaker_id, user_name)
            self.lanes.push(speaker_id, name, frame, display_name=user_name)

    def _on_lane_event(self, speaker: Speaker, event: LaneEvent) -> None:
        """After ``SpeakerLanes`` did the speaker's bookkeeping for ``event``."""
        self.barge_in.observe(event)
        self.router.on_lane_event(speaker, event)

    # --- tasks and turns ---------------------------------------------------------------------
    def _turn_written(self, turn: NpcTurn) -> None:
        self.follow_up.written(turn)

    def _turn_done(self, turn: NpcTurn) -> None:
        self.follow_up.done(turn)

    def _spawn(self, coroutine: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine, name=name)
        self._adopt(task)
        return task

    def _adopt(self, task: asyncio.Task[Any]) -> None:
        """The session owns ``task``: ``stop`` cancels it."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _cancel_all(tasks: Sequence[asyncio.Task[Any]], timeout_s: float = 5.0) -> None:
    if not tasks:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout_s)
