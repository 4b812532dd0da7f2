"""``SpeakerLane``: one player's audio in, that player's speech events out.

Push 20 ms frames (48 kHz stereo s16le as Discord sends, or 16 kHz mono s16le as the receiver
decodes for STT) from any thread, never blocking, or let the socket thread ``hear`` them in place
(:mod:`bot.audio.speech.lane_feed`); iterate the lane for typed events. The lane owns its tasks: a
pump that brings pushed audio to 16 kHz mono and runs the VAD segmenter in a worker thread (batches
of frames when behind, so rehearsal can push faster than real time), the pause checks that decide
when the turn is over (:mod:`bot.audio.speech.endpointing`), at most one partial transcription at a
time, and the finals, emitted in utterance order. Every recognition and turn-model call goes
through the table's :class:`~bot.audio.speech.scheduler.CpuScheduler`. An error in any task is
re-raised to whoever iterates the lane.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator

from bot.audio.speech.audio import FRAME_MS, SttInput
from bot.audio.speech.backchannel import BackchannelDetector
from bot.audio.speech.endpointing import PauseCheck, PauseJudge, TurnModel
from bot.audio.speech.events import (
    LaneEvent,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
    TurnCheck,
)
from bot.audio.speech.lane_feed import LaneFeed, Silence
from bot.audio.speech.lane_stt import FINISHING_MS, LANE_END, LaneTranscription
from bot.audio.speech.name_slot import SlotLook
from bot.audio.speech.protocols import SttProvider, VadModel
from bot.audio.speech.scheduler import CpuScheduler
from bot.audio.speech.segmenter import (
    SegmentEnd,
    Segmenter,
    SegmentEvent,
    SegmentPause,
    SegmentProgress,
    SegmentStart,
)
from bot.audio.speech.turn_end import TurnEndPolicy
from bot.audio.speech.vad import create_vad
from bot.audio.speech.vocabulary import Vocabulary
from bot.settings.config import SpeechConfig

__all__ = ["SpeakerLane"]

log = logging.getLogger(__name__)

_END = LANE_END
_POLL = object()  # a verdict arrived: check the end rule without new audio
_MAX_BATCH = 250  # frames (5 s) per worker-thread call


class SpeakerLane(LaneFeed, LaneTranscription):
    """Per-speaker VAD, end of turn and streaming STT; ``async for event in lane`` until
    ``end_input()``.

    ``turn_model`` judges each pause with the transcript (``speech.turn``); without it turns end
    after ``speech.vad.hangover_ms``. ``addressing`` (set by the table from the partials) says
    whether the player talks to an NPC: partials of players who do not are the first to go when
    the CPU is busy.
    """

    def __init__(
        self,
        speaker: str,
        *,
        stt: SttProvider,
        config: SpeechConfig | None = None,
        vad: VadModel | None = None,
        vocabulary: Vocabulary | None = None,
        max_backlog_s: float = 60.0,
        scheduler: CpuScheduler | None = None,
        turn_model: TurnModel | None = None,
    ) -> None:
        self.speaker = speaker
        self._config = config or SpeechConfig()
        self._stt = stt
        self._stt_resource = "stt" if getattr(stt, "cpu_bound", True) else None
        self._vocabulary = vocabulary
        self.scheduler = scheduler or CpuScheduler()
        self.addressing: bool | None = None
        """True: talking to an NPC; False: to other players; None: not known yet."""
        self._backchannels = BackchannelDetector(self._config.backchannels)
        self._input = SttInput()
        turn = self._config.turn
        model = turn_model if turn.detector != "off" else None
        hangover = self._config.vad.hangover_ms
        self._policy = TurnEndPolicy(turn, hangover, _names(vocabulary))
        longest = turn.incomplete_ms if model is not None else hangover
        # Without a model a pause only needs its words before the hangover ends the turn: judge
        # it halfway, so short breaths mid-sentence cost no recognition.
        pause_ms = turn.pause_ms if model is not None else max(turn.pause_ms, hangover / 2)
        self._segmenter = Segmenter(
            vad or create_vad(self._config.vad),
            self._config.vad,
            hangover_ms=longest,
            pause_ms=pause_ms if pause_ms < longest else None,
        )
        self._finishing_ms = min(FINISHING_MS, pause_ms)
        self._judge = PauseJudge(
            lane=speaker,
            policy=self._policy,
            model=model,
            scheduler=self.scheduler,
            transcribe=self._pause_words,
            on_verdict=self._on_verdict,
            table_talk=lambda: self.table_talk,
        )
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._frames: asyncio.Queue[bytes | object] = asyncio.Queue()
        self._events: asyncio.Queue[LaneEvent | object] = asyncio.Queue()
        self._max_backlog = int(max_backlog_s * 1000 / FRAME_MS)
        self._ended = False
        self.dropped_frames = 0
        self.skipped_partials = 0
        self.named_early = 0
        self._partial_task: asyncio.Task[None] | None = None
        self._last_partial_at = 0.0
        self._last_partial_text = ""
        self._slot_look: SlotLook | None = None
        self._final_tasks: set[asyncio.Task[None]] = set()
        self._previous_final: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._init_feed()
        self._pump = self._loop.create_task(self._run(), name=f"speaker-lane:{speaker}")

    @property
    def trailing_silence_ms(self) -> float:
        """Silence since the player's last voiced audio in the utterance in progress."""
        return self._segmenter.trailing_silence_s * 1000.0

    @property
    def judges_turns(self) -> bool:
        """A turn model judges this lane's pauses (else the plain hangover ends turns)."""
        return self._judge.has_model

    # --- input ---------------------------------------------------------------------------------
    @property
    def vocabulary(self) -> Vocabulary | None:
        """The names transcriptions are prompted with and corrected toward."""
        return self._vocabulary

    def set_vocabulary(self, vocabulary: Vocabulary | None) -> None:
        """Recognise new names (an NPC was added or renamed) without reopening the lane.

        Transcriptions started from now on are prompted with ``vocabulary``; every text the
        lane emits from now on is corrected toward it, and a new NPC's name alone no longer
        ends a turn.
        """
        self._vocabulary = vocabulary
        self._policy.names = _names(vocabulary)

    def end_input(self) -> None:
        """No more audio: close any utterance, emit the last final, then end the iteration."""
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.end_input)
            return
        if not self._ended:
            self._ended = True
            self._frames.put_nowait(_END)

    # --- output --------------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[LaneEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[LaneEvent]:
        while True:
            item = await self._events.get()
            if item is _END:
                if self._error is not None:
                    raise self._error
                return
            yield item  # type: ignore[misc]

    async def aclose(self) -> None:
        """Stop everything now (pending finals are dropped)."""
        self._ended = True
        self._stop_feed()
        self._judge.drop()
        self.scheduler.speaking(self.speaker, False)
        tasks: list[asyncio.Task[object]] = [self._pump, *self._final_tasks]
        if self._partial_task is not None:
            tasks.append(self._partial_task)
        if self._slot_look is not None:
            tasks.append(self._slot_look.task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._events.put_nowait(_END)

    async def __aenter__(self) -> SpeakerLane:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the pump ------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            done = False
            held: list[bytes | Silence] = []  # frames that cannot complete a VAD window yet
            while not done:
                batch, held = held, []
                poll = False
                item = await self._frames.get()
                while True:
                    if item is _END:
                        done = True
                        break
                    if item is _POLL:
                        poll = True
                    else:
                        batch.append(item)  # type: ignore[arg-type]
                    if len(batch) >= _MAX_BATCH or self._frames.empty():
                        break
                    item = self._frames.get_nowait()
                if not (done or poll) and self._short_of_a_window(batch):
                    held = batch  # nothing the VAD could decide yet: no thread hop for it
                    continue
                await asyncio.to_thread(self._process, batch, done, poll)
            if self._partial_task is not None:
                self._partial_task.cancel()
            self._judge.drop()
            if self._previous_final is not None:
                await asyncio.shield(self._previous_final)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # re-raised to the reader
            log.exception("lane %s failed", self.speaker)
            self._error = self._error or error
        self._events.put_nowait(_END)

    def _emit(self, event: LaneEvent) -> None:
        self._events.put_nowait(event)

    def _handle(self, event: SegmentEvent) -> None:
        now = time.monotonic()
        if isinstance(event, SegmentStart):
            self._last_partial_at = event.onset
            self._last_partial_text = ""
            if self._slot_look is not None:
                self._slot_look.cancel()  # a final still due hears its slot again itself
                self._slot_look = None
            self.addressing = None
            self.scheduler.speaking(self.speaker, True)
            self._emit(SpeechStarted(self.speaker, event.utterance_id, event.onset, now))
        elif isinstance(event, SegmentProgress):
            self._emit(
                SpeechProgress(
                    self.speaker,
                    event.utterance_id,
                    event.voiced_ms,
                    event.stream_time,
                    now,
                    event.trailing_silence_ms,
                )
            )
            self._judge.resumed(event.stream_time - event.trailing_silence_ms / 1000)
            self._maybe_partial(event)
        elif isinstance(event, SegmentPause):
            segmenter = self._segmenter
            if segmenter.in_speech and segmenter.utterance_id == event.utterance_id:
                audio = segmenter.utterance_audio(event.audio_samples)
                spoken_s = event.voiced_end - segmenter.onset
                self._judge.pause(event.utterance_id, event.voiced_end, audio, spoken_s)
        elif isinstance(event, SegmentEnd):
            self._ended_utterance(event, now)

    def _ended_utterance(self, event: SegmentEnd, now: float) -> None:
        if self._partial_task is not None:
            self._partial_task.cancel()  # if still queued, it never runs; the final matters
        self.scheduler.speaking(self.speaker, False)
        check = self._judge.current
        reason = {"max length": "max length", "flush": "end of input"}.get(event.reason, "hangover")
        if event.reason == "rule" and check is not None and check.verdict is not None:
            reason = check.verdict.reason
        reused = None if event.truncated else self._judge.take_words(event.utterance_id, event.end)
        self._judge.drop()
        ended = SpeechEnded(
            self.speaker,
            event.utterance_id,
            event.onset,
            event.end,
            now,
            event.truncated,
            reason,
            round(event.silence_s * 1000.0, 1),
        )
        self._emit(ended)
        task = self._loop.create_task(
            self._final(ended, event.audio, self._previous_final, reused),
            name=f"speaker-lane:{self.speaker}:final:{event.utterance_id}",
        )
        self._previous_final = task
        self._final_tasks.add(task)
        task.add_done_callback(self._final_tasks.discard)

    def _on_verdict(self, check: PauseCheck, text: str | None) -> None:
        """A pause was judged: make its verdict the segmenter's end rule for that pause, and
        (once its words are in: ``text`` not None) report it."""
        verdict = check.verdict
        segmenter = self._segmenter
        if verdict is None or self._judge.current is not check:
            return
        if not (segmenter.in_speech and segmenter.utterance_id == check.utterance_id):
            return
        segmenter.set_end_rule(check.utterance_id, check.voiced_end, verdict.wait_ms / 1000)
        if self._heard_at is not None:
            self._watch_gap()  # packets may have stopped: the silence the rule counts, first
        if not self._ended:
            self._frames.put_nowait(_POLL)
        if text is None:
            return
        now = time.monotonic()
        if text and text != self._last_partial_text:  # the freshest words so far
            self._last_partial_text = text
            stream_time = segmenter.stream_time
            self._emit(PartialTranscript(self.speaker, check.utterance_id, text, stream_time, now))
        self._emit(
            TurnCheck(
                self.speaker,
                check.utterance_id,
                text,
                verdict.complete,
                verdict.wait_ms,
                verdict.reason,
                verdict.probability,
                now,
            )
        )


def _names(vocabulary: Vocabulary | None) -> tuple[str, ...]:
    return tuple(vocabulary.names) if vocabulary is not None else ()
