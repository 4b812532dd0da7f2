"""``TableSession``: one per voice connection; owns every task of the table.

Flow: ``push_frame`` -> a ``SpeakerLane`` per speaker (created on the first frame) -> lane events.
Partials feed the tier selector and a speculative entity lookup; finals go through address
detection to a per-NPC turn queue (its depth feeds the tier selector) -> ``run_turn`` (engine ->
sentences -> TTS -> the NPC's mixer handle). Barge-in cancels the engine turn and records only the
words played. Transcripts are committed to campaign memory as they happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config import GlyphoxaConfig
from bot.metrics import METRICS, Metrics
from bot.session.controls import DmControls
from bot.session.early import EarlyTranscript, FrameTail, transcribe_early
from bot.session.entities import EntityLookup
from bot.session.events import BargedIn, NpcSpoke, PlayerSpoke, Routed, SessionEvent
from bot.session.npc_queue import NpcQueues
from bot.session.recorder import TranscriptRecorder
from bot.session.speculation import PauseDetector, Speculation, normalize
from bot.session.timing import StreamClock, TimedStt, TimedTts
from bot.session.trace import TurnTrace
from bot.session.turns import NpcTurn
from bot.speech import (
    Backchannel,
    BargeIn,
    BargeInController,
    FinalTranscript,
    Mixer,
    PartialTranscript,
    SpeakerLane,
    SpeechEnded,
    SpeechStarted,
    SttProvider,
    TtsProvider,
    Vocabulary,
)
from campaigns.errors import GlyphoxaError
from npcs.addressing import AddressDetector
from npcs.campaign import Campaign, CampaignWatcher
from npcs.context import SceneLine
from npcs.engines import Engine
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector
from tools.tiers import Tier

__all__ = ["EngineResolver", "TableSession"]

log = logging.getLogger(__name__)

#: NPC definition -> the engine that answers for it (None: speak nothing but ``say`` lines).
EngineResolver = Callable[[NpcDefinition], Engine | None]
_MAX_SCENE = 40
_FINAL_EXPIRY_S = 15.0  # an utterance with no words yields no final; stop waiting for it


@dataclass(slots=True)
class _Speaker:
    id: str
    name: str
    lane: SpeakerLane
    stt: TimedStt
    clock: StreamClock
    task: asyncio.Task[None] | None = None
    speaking: bool = False
    partial_tier: str | None = None
    awaiting: dict[int, float] = field(default_factory=dict)
    """Utterances that ended and whose final transcript has not arrived (id -> end time)."""
    pause: PauseDetector = field(default_factory=PauseDetector)
    paused: bool = False
    utterance_id: int = 0
    onset: float = 0.0
    """Stream time at which the current utterance started."""
    last_partial: str | None = None
    speculation: Speculation | None = None
    tail: FrameTail = field(default_factory=FrameTail)
    early_task: asyncio.Task[None] | None = None
    early: EarlyTranscript | None = None
    committed: dict[int, str] = field(default_factory=dict)
    """Utterances already routed on their early transcript (id -> text)."""
    ends: dict[int, float] = field(default_factory=dict)
    """Stream time of the last voiced audio of ended utterances."""


class TableSession(DmControls):
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
    ) -> None:
        self.config = config
        self.campaign = campaign
        self.metrics = metrics
        self.mixer = mixer or Mixer(config.speech)
        self.memory = memory
        self.tools: Any = None
        """The tool host serving this table (set by ``open_table``; for ``/tools``)."""
        self._stt = stt
        self._tts = TimedTts(tts, metrics)
        self._engines = engines
        self._vad_factory = vad_factory
        self._title = session_title
        self.speculate = bool(speculate)
        """Start answers on partials; a callable decides per NPC and tier."""
        self._may_speculate = speculate if callable(speculate) else None
        self.dm_speakers = set(dm_speakers)
        self.addressing = AddressDetector(
            campaign.npcs, continuation_window_s=config.tiers.continuation_window_s
        )
        self.tiers = TierSelector(config.tiers)
        self.vocabulary = Vocabulary.from_campaign(campaign)
        self.barge_in = BargeInController(
            self.mixer,
            confirm_ms=config.speech.barge_in_confirm_ms,
            backchannels=config.speech.backchannels,
            on_barge_in=self._on_barge_in,
        )
        self.entities = EntityLookup(campaign, memory)
        self.recorder = TranscriptRecorder(memory, campaign.name)
        self.scene: list[SceneLine] = []
        self.traces: list[TurnTrace] = []
        self.listeners: list[Callable[[SessionEvent], None]] = []
        self.muted: set[str] = set()
        self.all_muted = False
        self._speakers: dict[str, _Speaker] = {}
        self.turns = NpcQueues(
            mixer=self.mixer,
            campaign=campaign,
            engines=engines,
            tts=self._tts,
            scene=lambda: self.scene,
            spawn=self._spawn,
            on_done=self._finish_trace,
        )
        self._turn_ids = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watcher: CampaignWatcher | None = None
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
        await self.recorder.start(self._title)
        # The watcher remembers every NPC file now, so reload_npcs() sees later edits even
        # when background hot reload is off.
        self._watcher = CampaignWatcher(self.campaign)
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
        for speaker in self._speakers.values():
            self._drop_speculation(speaker)
        self.mixer.cancel_all()
        tasks = list(self._tasks)
        for speaker in self._speakers.values():
            await speaker.lane.aclose()
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
        for speaker in self._speakers.values():
            speaker.lane.end_input()
        readers = [s.task for s in self._speakers.values() if s.task is not None]
        if readers:
            await asyncio.gather(*readers, return_exceptions=True)

    @property
    def busy(self) -> bool:
        """An NPC turn is queued, thinking or speaking."""
        return self.mixer.busy or self.turns.busy()

    @property
    def listening(self) -> bool:
        """A player is speaking, or an utterance's final transcript is still being made."""
        horizon = time.monotonic() - _FINAL_EXPIRY_S
        return any(
            s.speaking or any(at > horizon for at in s.awaiting.values())
            for s in self._speakers.values()
        )

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

    def _push(self, speaker_id: str, user_name: str, frame: bytes) -> None:
        if self._stopped:
            return
        speaker = self._speakers.get(speaker_id)
        if speaker is None:
            speaker = self._open_lane(speaker_id, user_name)
        speaker.lane.push(frame)
        speaker.clock.record(time.monotonic())
        if not self.speculate:
            return
        speaker.tail.add(speaker.clock.pushed_s, frame)
        if speaker.pause.push(frame):
            speaker.paused = True
            if speaker.speaking:
                self._on_pause(speaker)
        elif speaker.paused and speaker.pause.quiet_frames == 0:
            speaker.paused = False
            self._on_resume(speaker)

    def _open_lane(self, speaker_id: str, user_name: str) -> _Speaker:
        stt = TimedStt(self._stt, self.metrics)
        lane = SpeakerLane(
            speaker_id,
            stt=stt,
            config=self.config.speech,
            vad=self._vad_factory() if self._vad_factory else None,
            vocabulary=self.vocabulary,
        )
        speaker = _Speaker(speaker_id, user_name, lane, stt, StreamClock())
        self._speakers[speaker_id] = speaker
        speaker.task = self._spawn(self._read_lane(speaker), f"table:lane:{user_name}")
        log.info("new speaker %s (%s)", user_name, speaker_id)
        return speaker

    async def _read_lane(self, speaker: _Speaker) -> None:
        try:
            async for event in speaker.lane:
                self.barge_in.observe(event)
                if isinstance(event, SpeechStarted):
                    speaker.utterance_id = event.utterance_id
                    speaker.onset = event.stream_time
                    speaker.last_partial = None
                    speaker.early = None
                    self._set_speaking(speaker, True)
                elif isinstance(event, SpeechEnded):
                    speaker.awaiting[event.utterance_id] = time.monotonic()
                    speaker.ends[event.utterance_id] = event.stream_time
                    self._set_speaking(speaker, False)
                    self._commit_early(speaker, event.utterance_id)
                elif isinstance(event, PartialTranscript):
                    self._on_partial(speaker, event)
                elif isinstance(event, FinalTranscript):
                    speaker.awaiting.pop(event.utterance_id, None)
                    speaker.ends.pop(event.utterance_id, None)
                    if not self._confirm_early(speaker, event):
                        self._on_final(speaker, event)
                elif isinstance(event, Backchannel):
                    speaker.awaiting.pop(event.utterance_id, None)
                    self._drop_speculation(speaker, event.utterance_id)
        except GlyphoxaError as error:
            log.error("lane of %s stopped: %s", speaker.name, error)
        finally:
            self._set_speaking(speaker, False)

    def _set_speaking(self, speaker: _Speaker, speaking: bool) -> None:
        speaker.speaking = speaking
        self.metrics.active_speakers.set(sum(s.speaking for s in self._speakers.values()))

    # --- partials and finals -----------------------------------------------------------------
    def _on_partial(self, speaker: _Speaker, event: PartialTranscript) -> None:
        now = time.monotonic()
        mentions = self.addressing.mentions(event.text)
        npc = self.campaign.npcs.get(mentions[0].npc) if mentions else None
        decision = self.tiers.select(event.text, npc=npc, queue_depth=self.queue_depth(), now=now)
        speaker.partial_tier = decision.tier.label
        self.entities.prefetch(event.text)
        if event.utterance_id == speaker.utterance_id:
            speaker.last_partial = event.text
        spec = speaker.speculation
        if spec is not None and spec.key != normalize(event.text):
            self._drop_speculation(speaker)  # the player went on talking, or a late partial
        paused = speaker.pause.quiet_frames >= speaker.pause.frames_needed
        if self.speculate and paused and speaker.speaking:
            self._speculate(speaker)  # this partial finished computing during the pause

    def _on_final(self, speaker: _Speaker, event: FinalTranscript) -> None:
        self._route(
            speaker,
            event.utterance_id,
            event.text,
            speech_start=speaker.clock.wall_at(event.started_at),
            speech_end=speaker.clock.wall_at(event.ended_at) or event.speech_end_wall_time,
            final_at=event.wall_time,
            stt_ms=speaker.stt.pop_final_ms(),
        )

    def _route(
        self,
        speaker: _Speaker,
        utterance_id: int,
        text: str,
        *,
        speech_start: float | None,
        speech_end: float | None,
        final_at: float,
        stt_ms: float | None,
    ) -> None:
        """A player's utterance is final: record it, find the addressees, queue their turns."""
        now = time.monotonic()
        self._emit(PlayerSpoke(speaker.name, text, speech_start, speech_end, now))
        self._add_scene(SceneLine(speaker.name, text, None, now))
        self.recorder.player(speaker.name, text, speech_start or now, speech_end or now)
        decision = self.addressing.detect(
            speaker.name, text, now, is_dm=speaker.name in self.dm_speakers
        )
        self.entities.prefetch(text)
        names = [n for n in decision.npcs if n in self.campaign.npcs and not self.is_muted(n)]
        tier_label = tier_reason = None
        spec = speaker.speculation
        if spec is not None and spec.utterance_id == utterance_id:
            speaker.speculation = None
        else:
            spec = None
        for name in names:
            npc = self.campaign.npcs[name]
            tier = self.tiers.select(text, npc=npc, queue_depth=self.queue_depth(), now=now)
            self.tiers.commit(tier, npc=name, now=now)
            adopted = None
            if (
                spec is not None
                and spec.npc == name
                and spec.tier == tier.tier
                and spec.key == normalize(text)
                and decision.puppet_text is None
            ):
                adopted, spec = spec, None
            tier_label, tier_reason = tier.tier.label, tier.reason
            trace = self._new_trace(name, speaker.name, text, tier.tier, tier.reason)
            trace.address_reason = decision.reason
            trace.speech_end = speech_end
            trace.final_transcript = final_at
            trace.stt_compute_ms = round(stt_ms, 2) if stt_ms is not None else None
            trace.speculative = adopted is not None
            self._enqueue(
                name,
                speaker.name,
                text,
                tier.tier,
                trace,
                verbatim=decision.puppet_text,
                snapshot_text=text,
                speculation=adopted,
            )
        if spec is not None:
            spec.cancel()  # the final said something else
        reason = decision.reason if names or not decision.npcs else "muted"
        self._emit(Routed(speaker.name, text, tuple(names), reason, tier_label, tier_reason, now))

    # --- turns -------------------------------------------------------------------------------
    def queue_depth(self) -> int:
        """Players waiting for an NPC (turns queued, not yet started)."""
        return self.turns.depth()

    def _new_trace(self, npc: str, speaker: str, text: str, tier: Tier, reason: str) -> TurnTrace:
        self._turn_ids += 1
        return TurnTrace(self._turn_ids, npc, speaker, text, tier.label, reason)

    def _enqueue(
        self,
        npc: str,
        speaker: str,
        text: str,
        tier: Tier,
        trace: TurnTrace,
        *,
        verbatim: str | None = None,
        snapshot_text: str | None = None,
        speculation: Speculation | None = None,
    ) -> None:
        lookup = self.entities
        snapshot = (lambda: lookup.snapshot(snapshot_text, trace)) if snapshot_text else None
        self.turns.enqueue(
            npc, speaker, text, tier, trace,
            verbatim=verbatim, snapshot=snapshot, speculation=speculation,
        )  # fmt: skip

    def _finish_trace(self, turn: NpcTurn) -> None:
        trace = turn.trace
        self.traces.append(trace)
        if trace.playback_start is not None:
            self.metrics.observe_turn(trace.stages_ms())
        outcome = "failed" if trace.error else "interrupted" if trace.interrupted else "done"
        self.metrics.turns.labels(outcome, trace.tier).inc()
        now = time.monotonic()
        if trace.spoken:
            self._add_scene(SceneLine(turn.npc, trace.spoken, turn.npc, now))
            self.recorder.npc(
                turn.npc,
                trace.spoken,
                trace.playback_start or now,
                now,
                tier=trace.tier,
                interrupted=trace.interrupted,
            )
        self._emit(NpcSpoke(trace, now))

    def _on_barge_in(self, barge: BargeIn) -> None:
        self.turns.interrupt(barge.npc)
        speaker = self._speakers.get(barge.speaker)
        who = speaker.name if speaker else barge.speaker
        self._emit(BargedIn(who, barge.npc, barge.heard.played_text, time.monotonic()))

    # --- pauses: early transcripts and speculation --------------------------------------------
    def _on_pause(self, speaker: _Speaker) -> None:
        """The player fell quiet mid-utterance: guess on the partial, transcribe what we have."""
        self._speculate(speaker)
        if speaker.early_task is None or speaker.early_task.done():
            frames = speaker.tail.since(speaker.onset)
            speaker.early_task = self._spawn(
                self._transcribe_early(speaker, speaker.utterance_id, frames),
                f"table:early:{speaker.name}",
            )

    def _on_resume(self, speaker: _Speaker) -> None:
        """The player went on talking: what we guessed at the pause is stale."""
        if speaker.early_task is not None:
            speaker.early_task.cancel()
            speaker.early_task = None
        speaker.early = None
        self._drop_speculation(speaker)

    async def _transcribe_early(
        self, speaker: _Speaker, utterance_id: int, frames: list[bytes]
    ) -> None:
        try:
            early = await transcribe_early(self._stt, frames, utterance_id, self.vocabulary)
        except GlyphoxaError as error:
            log.debug("early transcript for %s failed: %s", speaker.name, error)
            return
        self.metrics.stt_seconds.labels("early").observe(early.compute_ms / 1000.0)
        still_paused = speaker.speaking and speaker.utterance_id == utterance_id and speaker.paused
        ended = utterance_id in speaker.awaiting  # the lane already closed the utterance
        if not early.text or not (still_paused or ended):
            return
        speaker.early = early
        speaker.last_partial = early.text
        spec = speaker.speculation
        if spec is not None and spec.key != normalize(early.text):
            self._drop_speculation(speaker)
        self._speculate(speaker)
        if ended:
            self._commit_early(speaker, utterance_id)

    def _commit_early(self, speaker: _Speaker, utterance_id: int) -> None:
        """The lane confirmed the end with no speech since the pause: route the early words."""
        early = speaker.early
        if early is None or early.utterance_id != utterance_id or not self.speculate:
            return
        speaker.early = None
        speaker.committed[utterance_id] = early.text
        voiced_end = speaker.ends.get(utterance_id)
        self._route(
            speaker,
            utterance_id,
            early.text,
            speech_start=speaker.clock.wall_at(speaker.onset),
            speech_end=speaker.clock.wall_at(voiced_end) if voiced_end is not None else None,
            final_at=time.monotonic(),
            stt_ms=early.compute_ms,
        )

    def _confirm_early(self, speaker: _Speaker, event: FinalTranscript) -> bool:
        """The lane's final for an utterance routed early: keep the books straight."""
        text = speaker.committed.pop(event.utterance_id, None)
        if text is None:
            return False
        speaker.stt.pop_final_ms()
        if normalize(text) != normalize(event.text):
            log.info("early transcript %r; the final heard %r", text, event.text)
        return True

    # --- speculation -------------------------------------------------------------------------
    def _speculate(self, speaker: _Speaker) -> None:
        """The player paused: start the named NPC's answer on the latest partial."""
        text = speaker.last_partial
        if not text or speaker.speculation is not None:
            return
        spoken_to = [m.npc for m in self.addressing.mentions(text) if m.vocative]
        if len(spoken_to) != 1 or speaker.name in self.dm_speakers:
            return
        name = spoken_to[0]
        npc = self.campaign.npcs.get(name)
        if npc is None or self.is_muted(name):
            return
        if self.turns.npc_busy(name):
            return  # answers keep their order; this one waits for the final
        engine = self._engines(npc)
        if engine is None:
            return
        now = time.monotonic()
        tier = self.tiers.select(text, npc=npc, queue_depth=self.queue_depth(), now=now)
        if self._may_speculate is not None and not self._may_speculate(npc, tier.tier):
            return
        lookup = self.entities
        spec = Speculation(
            speaker.name,
            speaker.utterance_id,
            name,
            text,
            tier.tier,
            snapshot=lambda: lookup.snapshot(text),
        )
        speaker.speculation = spec.start(engine, npc, list(self.scene), tts=self._tts)
        if spec.task is not None:
            self._tasks.add(spec.task)
            spec.task.add_done_callback(self._tasks.discard)

    def _drop_speculation(self, speaker: _Speaker, utterance_id: int | None = None) -> None:
        spec = speaker.speculation
        if spec is not None and (utterance_id is None or spec.utterance_id == utterance_id):
            spec.cancel()
            speaker.speculation = None

    # --- helpers -----------------------------------------------------------------------------
    def _npcs_changed(self) -> None:
        self.addressing.set_npcs(self.campaign.npcs)
        self.vocabulary = Vocabulary.from_campaign(self.campaign)

    async def _watch(self) -> None:
        assert self._watcher is not None
        async for change in self._watcher:
            if change.kind == "invalid":
                log.warning("NPC file %s is invalid; keeping the last good version", change.path)
            else:
                log.info("NPC %s %s", change.name, change.kind)
            self._npcs_changed()

    def _add_scene(self, line: SceneLine) -> None:
        self.scene.append(line)
        del self.scene[:-_MAX_SCENE]

    def _emit(self, event: SessionEvent) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("session listener failed on %s", type(event).__name__)

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
