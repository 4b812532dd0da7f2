"""``SpeakerLane``: one player's audio in, that player's speech events out.

Push 20 ms frames of 48 kHz stereo s16le (from any thread, never blocking); iterate the lane for
typed events. The lane owns its tasks: a pump that resamples once to 16 kHz mono and runs the
VAD segmenter in a worker thread (batches of frames when behind, so rehearsal can push faster
than real time), at most one partial transcription at a time (skipped while the previous one
still runs, which caps its cost), and the finals, emitted in utterance order. An error in any of
them is re-raised to whoever iterates the lane.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator

import numpy as np

from bot.config import SpeechConfig
from bot.speech.audio import FRAME_BYTES, FRAME_MS, InputResampler
from bot.speech.backchannel import BackchannelDetector
from bot.speech.events import (
    Backchannel,
    FinalTranscript,
    LaneEvent,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
)
from bot.speech.protocols import SttProvider, VadModel
from bot.speech.segmenter import SegmentEnd, Segmenter, SegmentEvent, SegmentProgress, SegmentStart
from bot.speech.vad import create_vad
from bot.speech.vocabulary import Vocabulary
from campaigns.errors import GlyphoxaError

__all__ = ["SpeakerLane"]

log = logging.getLogger(__name__)

_END = object()
_MAX_BATCH = 250  # frames (5 s) per worker-thread call


class SpeakerLane:
    """Per-speaker VAD + streaming STT; ``async for event in lane`` until ``end_input()``."""

    def __init__(
        self,
        speaker: str,
        *,
        stt: SttProvider,
        config: SpeechConfig | None = None,
        vad: VadModel | None = None,
        vocabulary: Vocabulary | None = None,
        max_backlog_s: float = 60.0,
    ) -> None:
        self.speaker = speaker
        self._config = config or SpeechConfig()
        self._stt = stt
        self._vocabulary = vocabulary
        self._backchannels = BackchannelDetector(self._config.backchannels)
        self._resampler = InputResampler()
        self._segmenter = Segmenter(vad or create_vad(self._config.vad), self._config.vad)
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._frames: asyncio.Queue[bytes | object] = asyncio.Queue()
        self._events: asyncio.Queue[LaneEvent | object] = asyncio.Queue()
        self._max_backlog = int(max_backlog_s * 1000 / FRAME_MS)
        self._ended = False
        self.dropped_frames = 0
        self._partial_task: asyncio.Task[None] | None = None
        self._last_partial_at = 0.0
        self._last_partial_text = ""
        self._final_tasks: set[asyncio.Task[None]] = set()
        self._previous_final: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._pump = self._loop.create_task(self._run(), name=f"speaker-lane:{speaker}")

    # --- input ---------------------------------------------------------------------------------
    def push(self, frame: bytes) -> None:
        """Queue one 20 ms frame; safe from any thread; drops (and counts) on a huge backlog."""
        if len(frame) != FRAME_BYTES:
            raise ValueError(f"expected {FRAME_BYTES}-byte frames, got {len(frame)}")
        if threading.get_ident() == self._loop_thread:
            self._enqueue(frame)
        else:
            self._loop.call_soon_threadsafe(self._enqueue, frame)

    @property
    def vocabulary(self) -> Vocabulary | None:
        """The names transcriptions are prompted with and corrected toward."""
        return self._vocabulary

    def set_vocabulary(self, vocabulary: Vocabulary | None) -> None:
        """Recognise new names (an NPC was added or renamed) without reopening the lane.

        Transcriptions started from now on are prompted with ``vocabulary``; every text the
        lane emits from now on is corrected toward it.
        """
        self._vocabulary = vocabulary

    def _enqueue(self, frame: bytes) -> None:
        if self._ended:
            return
        if self._frames.qsize() >= self._max_backlog:
            self.dropped_frames += 1
            if self.dropped_frames % 250 == 1:
                log.warning("lane %s: %d frames behind, dropping", self.speaker, self._max_backlog)
            return
        self._frames.put_nowait(frame)

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
        tasks = [self._pump, *self._final_tasks]
        if self._partial_task is not None:
            tasks.append(self._partial_task)
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
            while not done:
                batch: list[bytes] = []
                item = await self._frames.get()
                while True:
                    if item is _END:
                        done = True
                        break
                    batch.append(item)  # type: ignore[arg-type]
                    if len(batch) >= _MAX_BATCH or self._frames.empty():
                        break
                    item = self._frames.get_nowait()
                events = await asyncio.to_thread(self._process, batch, done)
                for event in events:
                    self._handle(event)
            if self._partial_task is not None:
                self._partial_task.cancel()
            if self._previous_final is not None:
                await asyncio.shield(self._previous_final)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # re-raised to the reader
            log.exception("lane %s failed", self.speaker)
            self._error = self._error or error
        self._events.put_nowait(_END)

    def _process(self, batch: list[bytes], last: bool) -> list[SegmentEvent]:
        """Worker thread: resample + VAD the batch."""
        samples = self._resampler.process(b"".join(batch), last=last)
        events = self._segmenter.process(samples)
        if last:
            events += self._segmenter.flush()
        return events

    def _emit(self, event: LaneEvent) -> None:
        self._events.put_nowait(event)

    def _handle(self, event: SegmentEvent) -> None:
        now = time.monotonic()
        if isinstance(event, SegmentStart):
            self._last_partial_at = event.onset
            self._last_partial_text = ""
            self._emit(SpeechStarted(self.speaker, event.utterance_id, event.onset, now))
        elif isinstance(event, SegmentProgress):
            self._emit(
                SpeechProgress(
                    self.speaker, event.utterance_id, event.voiced_ms, event.stream_time, now
                )
            )
            self._maybe_partial(event)
        elif isinstance(event, SegmentEnd):
            if self._partial_task is not None:
                self._partial_task.cancel()  # if still queued, it never runs; the final matters
            ended = SpeechEnded(
                self.speaker, event.utterance_id, event.onset, event.end, now, event.truncated
            )
            self._emit(ended)
            task = self._loop.create_task(
                self._final(ended, event.audio, self._previous_final),
                name=f"speaker-lane:{self.speaker}:final:{event.utterance_id}",
            )
            self._previous_final = task
            self._final_tasks.add(task)
            task.add_done_callback(self._final_tasks.discard)

    # --- transcription -------------------------------------------------------------------------
    def _maybe_partial(self, event: SegmentProgress) -> None:
        interval = self._config.partial_interval_ms / 1000
        if event.stream_time - self._last_partial_at < interval:
            return
        if event.trailing_silence_ms > 100:
            return  # the player may be finishing: keep the recognizer free for the final
        if self._partial_task is not None and not self._partial_task.done():
            return  # the previous partial is still running: skip, never queue
        if self._segmenter.utterance_id != event.utterance_id or not self._segmenter.in_speech:
            return  # already ended within this batch; the final is coming
        self._last_partial_at = event.stream_time
        audio = self._segmenter.utterance_audio(event.audio_samples)
        self._partial_task = self._loop.create_task(
            self._partial(event, audio), name=f"speaker-lane:{self.speaker}:partial"
        )

    async def _partial(self, event: SegmentProgress, audio: np.ndarray) -> None:
        try:
            text = await self._stt.transcribe(audio, partial=True, vocabulary=self._vocabulary)
        except Exception as error:  # partials are best effort; the final reports failures
            log.warning("partial transcription failed for %s: %s", self.speaker, error)
            return
        text = self._correct(text)
        still_speaking = (
            self._segmenter.in_speech and self._segmenter.utterance_id == event.utterance_id
        )
        if text and text != self._last_partial_text and still_speaking:
            self._last_partial_text = text
            self._emit(
                PartialTranscript(
                    self.speaker, event.utterance_id, text, event.stream_time, time.monotonic()
                )
            )

    async def _final(
        self, ended: SpeechEnded, audio: np.ndarray, previous: asyncio.Task[None] | None
    ) -> None:
        try:
            text = self._correct(
                await self._stt.transcribe(audio, partial=False, vocabulary=self._vocabulary)
            )
            if previous is not None:
                await asyncio.shield(previous)  # finals leave in utterance order
        except asyncio.CancelledError:
            raise
        except GlyphoxaError as error:  # a service hiccup loses this turn, not the lane
            log.error("transcription failed for %s: %s", self.speaker, error)
            return
        except BaseException as error:
            self._error = self._error or error
            self._emit(_END)  # type: ignore[arg-type]
            raise
        now = time.monotonic()
        if not text:
            log.debug("utterance %d of %s had no words", ended.utterance_id, self.speaker)
        elif self._backchannels.is_backchannel(text):
            self._emit(Backchannel(self.speaker, ended.utterance_id, text, now))
        else:
            self._emit(
                FinalTranscript(
                    self.speaker,
                    ended.utterance_id,
                    text,
                    ended.started_at,
                    ended.stream_time,
                    now,
                    ended.wall_time,
                    ended.truncated,
                )
            )

    def _correct(self, text: str) -> str:
        text = " ".join(text.split())
        return self._vocabulary.correct(text) if self._vocabulary else text
