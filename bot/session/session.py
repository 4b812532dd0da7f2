"""``TableSession``: one per voice connection; owns every task of the table.

Flow: ``push_frame`` -> a ``SpeakerLane`` per speaker (created on the first frame) -> lane events.
Partials feed the tier selector and a speculative entity lookup; a judged pause may start the
answer speculatively; finals go through address detection to a per-NPC turn queue (its depth
feeds the tier selector) -> ``run_turn`` (engine -> sentences -> TTS -> the NPC's mixer handle).
Barge-in cancels the engine turn and records only the words played; an answer naming another NPC
may get its short reaction (``reactions``). Transcripts are committed to campaign memory as they
happen. One ``CpuScheduler`` orders the table's CPU work: the end of a speaker's turn, then the
answering NPC's voice, then partials.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bot.config import GlyphoxaConfig
from bot.metrics import METRICS, Metrics
from bot.session.alerts import TroubleDesk
from bot.session.characters import CharacterControls, CharacterRoster
from bot.session.controls import Direction, DmControls
from bot.session.entities import EntityLookup
from bot.session.events import (
    LiveEvent,
    NpcReloaded,
    NpcSpoke,
    PlayerPartial,
    SessionEvent,
    SpeakingChanged,
    TurnEnded,
)
from bot.session.npc_queue import NpcQueues
from bot.session.prefill import Prefiller
from bot.session.reactions import Reactions
from bot.session.recorder import TranscriptRecorder
from bot.session.routing import Routing
from bot.session.speakers import Speaker, SpeakerLanes
from bot.session.timing import TimedTts
from bot.session.trace import TurnTrace
from bot.session.turns import NpcTurn
from bot.session.voice_commands import VoiceCommands
from bot.speech import (
    Backchannel,
    BargeInController,
    FinalTranscript,
    LaneEvent,
    Mixer,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
    SttProvider,
    TtsProvider,
    Vocabulary,
    VoiceRouter,
)
from bot.speech.endpointing import TurnModel
from bot.speech.events import TurnCheck
from bot.speech.scheduler import CpuScheduler
from campaigns.basics import GlyphoxaError, Tier
from campaigns.yamlio import Issue, YamlDocument
from npcs.addressing import AddressDetector
from npcs.campaign import Campaign, CampaignWatcher
from npcs.campaign.checks import npc_voice_issue
from npcs.context import SceneLine, SceneWindow
from npcs.dm_voice import DmCommandParser
from npcs.engines import Engine
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector

__all__ = ["EngineResolver", "TableSession"]

log = logging.getLogger(__name__)

#: NPC definition -> the engine that answers for it (None: speak nothing but ``say`` lines).
EngineResolver = Callable[[NpcDefinition], Engine | None]
_MAX_SCENE = 40


class TableSession(Routing, Reactions, DmControls, VoiceCommands, CharacterControls):
    """The whole table pipeline for one voice connection (Discord or rehearsal)."""

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
        self.tools: Any = None
        """The tool host serving this table (set by ``open_table``; for ``/tools``)."""
        self.spend: Any = None
        """The night's cost (``bot.session.spend.SpendMeter``, set by ``open_table``)."""
        self.warm_up: asyncio.Task[None] | None = None
        """The LLM prompt-cache warm-up running in the background (set by ``open_table``)."""
        self._stt = stt
        self.scheduler = scheduler or CpuScheduler()
        self._tts = TimedTts(tts, metrics, self.scheduler)
        self._engines = engines
        self._title = session_title
        self._resume_memory = memory_session_id
        """A memory session to continue (a table resumed after a restart) instead of a new one."""
        self.speculate = bool(speculate)
        """Start answers on partials; a callable decides per NPC and tier."""
        self._may_speculate = speculate if callable(speculate) else None
        self.dm_speakers = set(dm_speakers)
        self.dm_resolver: Callable[[str], bool] | None = None
        self.characters = CharacterRoster(campaign, memory)
        """Who plays whom: players are named by their character (``/iam``, campaign.yaml)."""
        self.addressing = AddressDetector(
            campaign.npcs,
            continuation_window_s=config.tiers.continuation_window_s,
            characters=self.characters.names(),
        )
        self.dm_commands = DmCommandParser(self.addressing.mentions)
        self._private_next: dict[str, tuple[str, float]] = {}
        self.tiers = TierSelector(config.tiers)
        self.barge_in = BargeInController(
            self.mixer,
            confirm_ms=config.speech.barge_in_confirm_ms,
            backchannels=config.speech.backchannels,
            on_barge_in=self._on_barge_in,
        )
        self.entities = EntityLookup(campaign, memory)
        self.recorder = TranscriptRecorder(memory, campaign.name)
        self.scene: list[SceneLine] = []
        self.scene_window = SceneWindow()
        """Where prompts begin the scene: put while it grows (the LLM keeps its prefix)."""
        self._scene_seq = 0
        self.traces: list[TurnTrace] = []
        self.listeners: list[Callable[[SessionEvent], None]] = []
        self.watchers: list[Callable[[SessionEvent | LiveEvent], None]] = []
        """Live displays (the DM's console): every event, plus the live ones (module
        ``events``); called on the loop, they must return at once and never raise."""
        self.trouble = TroubleDesk(self._emit, metrics)
        """Failures the DM is told about (a failed turn, a crashed model server)."""
        self._voices = tts if isinstance(tts, VoiceRouter) else None
        if self._voices is not None:  # a voice that breaks mid-table is told to the DM
            self._voices.on_fallback = self.trouble.voice_failed
        self.muted: set[str] = set()
        self.all_muted = False
        self.directions: dict[str, Direction] = {}
        """The DM's private directions per NPC (``direct``)."""
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
            mixer=self.mixer,
            campaign=campaign,
            engines=engines,
            tts=self._tts,
            scene=self.scene_for,
            spawn=self._spawn,
            on_done=self._finish_trace,
            on_written=self._prefill_written,
            scheduler=self.scheduler,
        )
        self.prefiller = Prefiller(engines, prefill)
        """Evaluates NPC prompts ahead of their turns (a local LLM's prompt cache)."""
        self._init_reactions()
        self._turn_ids = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watcher: CampaignWatcher | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._resume_ms = float(config.speech.turn.pause_ms)
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
        self._names_changed()
        # The watcher remembers every NPC file now, so reload_npcs() sees later edits even
        # when background hot reload is off.
        self._watcher = CampaignWatcher(self.campaign, checks=self._npc_checks)
        if self.config.campaign.hot_reload:
            self._spawn(self._watch(), "table:hot-reload")
        self._started = True

    async def stop(self) -> None:
        """Cancel every task, cut every voice, close lanes and end the memory session."""
        if self._stopped:
            return
        self._stopped = True
        if self._watcher is not None:
            self._watcher.close()
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
    def vocabulary(self) -> Vocabulary:
        """The campaign's names the recognizer is biased toward (refreshed on NPC reload)."""
        return self.lanes.vocabulary

    async def wait_idle(self, timeout_s: float = 60.0, poll_s: float = 0.02) -> bool:
        """Until no NPC turn is pending (True) or the timeout (False). For rehearsal and tests."""
        deadline = time.monotonic() + timeout_s
        while self.busy:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(poll_s)
        return True

    # --- input -------------------------------------------------------------------------------
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

    def _push(self, speaker_id: str, user_name: str, frame: bytes) -> None:
        if not self._stopped:
            name = self.characters.name_for(speaker_id, user_name)
            self.lanes.push(speaker_id, name, frame, display_name=user_name)

    def _on_lane_event(self, speaker: Speaker, event: LaneEvent) -> None:
        """After ``SpeakerLanes`` did the speaker's bookkeeping for ``event``."""
        self.barge_in.observe(event)
        if isinstance(event, SpeechStarted):
            self._player_started(speaker.name)
        elif isinstance(event, SpeechProgress):
            spec = speaker.speculation
            if spec is not None and event.trailing_silence_ms < self._resume_ms:
                speaker.drop_speculation(event.utterance_id)  # talking on after the pause
        elif isinstance(event, PartialTranscript):
            if self.private_words(speaker, event.text):  # the DM's "between us": unseen
                if self.watchers:
                    self._show(PlayerPartial(speaker.name, "", time.monotonic()))
                return
            if self.watchers:
                self._show(PlayerPartial(speaker.name, event.text, time.monotonic()))
            self._on_partial(speaker, event)
        elif isinstance(event, TurnCheck):
            self._on_turn_check(speaker, event)
        elif isinstance(event, SpeechStarted):
            if self.watchers:
                self._show(SpeakingChanged(speaker.name, True, time.monotonic()))
        elif isinstance(event, SpeechEnded):
            if self.watchers:
                self._show(SpeakingChanged(speaker.name, False, time.monotonic()))
            clock = speaker.clock
            self._emit(
                TurnEnded(
                    speaker.name,
                    clock.wall_at(event.started_at),
                    clock.wall_at(event.stream_time),
                    event.reason,
                    event.silence_ms,
                    event.wall_time,
                )
            )
        elif isinstance(event, FinalTranscript):
            self._on_final(speaker, event)
        elif isinstance(event, Backchannel):
            speaker.drop_speculation(event.utterance_id)

    # --- turns -------------------------------------------------------------------------------
    def queue_depth(self) -> int:
        """Players waiting for an NPC (turns queued, not yet started)."""
        return self.turns.depth()

    def engine_for(self, npc: NpcDefinition) -> Engine | None:
        """The engine that answers for ``npc`` at this table (None: it only speaks lines)."""
        return self._engines(npc)

    def _new_trace(self, npc: str, speaker: str, text: str, tier: Tier, reason: str) -> TurnTrace:
        self._turn_ids += 1
        return TurnTrace(self._turn_ids, npc, speaker, text, tier.label, reason)

    def _finish_trace(self, turn: NpcTurn) -> None:
        trace = turn.trace
        self.traces.append(trace)
        if trace.playback_start is not None:
            self.metrics.observe_turn(trace.stages_ms())
        outcome = "failed" if trace.error else "interrupted" if trace.interrupted else "done"
        self.metrics.turns.labels(outcome, trace.tier).inc()
        self._answer_ended(turn)
        now = time.monotonic()
        if trace.spoken:
            self._add_scene(SceneLine(turn.npc, trace.spoken, turn.npc, now))
            self._prefill_reply(turn, now)
            self.recorder.npc(
                turn.npc,
                trace.spoken,
                trace.playback_start or now,
                now,
                tier=trace.tier,
                interrupted=trace.interrupted,
                stages=trace.stages_ms() if trace.heard and trace.playback_start else None,
            )
        self._emit(NpcSpoke(trace, now))
        self.trouble.turn_failed(trace)

    def _prefill_reply(
        self, turn: NpcTurn, now: float, scene: Sequence[SceneLine] | None = None
    ) -> None:
        """The NPC finished: its player often answers right back, so prepare that turn."""
        npc = self.campaign.npcs.get(turn.npc)
        others = [t for t in self.turns.running() if t is not turn]
        if npc is None or others or self.turns.depth():
            return  # another answer is due next: it must not wait behind a prefill
        tier = self.tiers.select("", npc=npc, queue_depth=0, now=now).tier
        shown = self.scene_window.shown(self.scene if scene is None else scene)
        self.prefiller.ahead(npc, turn.speaker, tier, shown)

    def _prefill_written(self, turn: NpcTurn) -> None:
        """The answer is written but still playing: queue a reaction to it if one is due, else
        prepare the reply to it now, with the answer as the scene's next line. When the scene
        window moves, that is a few hundred tokens, which on a small CPU take longer than a
        player leaves between the end of an answer and the end of their reply. After a
        barge-in, the reply's turn evaluates again from the answer's line.

        The line is the voiced sentences as the transcript will hold them, not the model's raw
        reply: a reply's line breaks (joined by spaces once spoken) or a filler put the prompt
        off from that point, and the reply's turn evaluated ~100 tokens again."""
        voiced = turn.handle.full_text
        if self._react_to(turn) or not voiced:
            return
        line = SceneLine(turn.npc, voiced, turn.npc, time.monotonic(), self._scene_seq)
        self._prefill_reply(turn, line.at, [*self.scene, line][-_MAX_SCENE:])

    # --- helpers -----------------------------------------------------------------------------
    def _npcs_changed(self) -> None:
        """NPCs were added, renamed or edited: address them and recognise their names now."""
        self.addressing.set_npcs(self.campaign.npcs)
        self._names_changed()

    def _names_changed(self) -> None:
        """NPCs or characters changed: the recognizer and address detection know them all."""
        self.addressing.set_characters(self.characters.names())
        names = self.characters.names()
        self.lanes.set_vocabulary(Vocabulary.from_campaign(self.campaign, names))

    def _npc_checks(self, npc: NpcDefinition, path: Path, doc: YamlDocument | None) -> list[Issue]:
        """What an edited NPC must pass beyond its file: its voice is installed."""
        inventory = self._voices.inventory if self._voices is not None else None
        issue = npc_voice_issue(npc, path, doc, inventory) if inventory is not None else None
        return [issue] if issue is not None else []

    async def _watch(self) -> None:
        assert self._watcher is not None
        async for change in self._watcher:
            if change.kind == "invalid":
                log.warning("NPC file %s is invalid; keeping the last good version", change.path)
            else:
                log.info("NPC %s %s", change.name, change.kind)
            self._npcs_changed()
            issues = tuple(str(issue) for issue in change.issues)
            when = time.monotonic()
            self._show(NpcReloaded(change.name, change.kind, str(change.path), issues, when))

    def _add_scene(self, line: SceneLine) -> None:
        self.scene.append(dataclasses.replace(line, seq=self._scene_seq))
        self._scene_seq += 1
        del self.scene[:-_MAX_SCENE]
        self.scene_window.advance(self.scene)

    def _emit(self, event: SessionEvent) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("session listener failed on %s", type(event).__name__)
        self._show(event)

    def _show(self, event: SessionEvent | LiveEvent) -> None:
        for watcher in self.watchers:
            try:
                watcher(event)
            except Exception:
                log.exception("session watcher failed on %s", type(event).__name__)

    def _spawn(self, coroutine: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


async def _cancel_all(tasks: Sequence[asyncio.Task[Any]], timeout_s: float = 5.0) -> None:
    if not tasks:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout_s)
