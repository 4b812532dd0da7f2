"""Measuring what the models cost, without touching the models.

``TimedStt`` and ``TimedTts`` wrap any provider of the speech protocols and record how long each
call spends inside the model (metrics, and the turn trace's "model time" that the pipeline
overhead is computed against); ``TimedTts`` also takes the answer's turn at the CPU scheduler.
``StreamClock`` maps a lane's audio clock back to the wall clock: the lane reports *where in the
audio* speech ended; the session needs *when* that audio arrived.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import numpy as np

from bot.audio.speech.endpointing import gated
from bot.audio.speech.protocols import FirstLook, SttProvider, TtsProvider, TwoLookStt
from bot.audio.speech.scheduler import CpuScheduler, Work
from bot.telemetry.metrics import Metrics
from campaigns.basics import AudioChunk

if TYPE_CHECKING:
    from bot.audio.speech.vocabulary import Vocabulary
    from campaigns.providers.voices import VoiceSettings

__all__ = ["StreamClock", "TimedStt", "TimedTts"]


class TimedStt:
    """An ``SttProvider`` that records compute time per call (the lane's ``FinalTranscript``
    carries the recognition time of its own words)."""

    def __init__(self, inner: SttProvider, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics
        self.cpu_bound = bool(getattr(inner, "cpu_bound", True))

    async def transcribe(
        self,
        audio: np.ndarray,
        *,
        partial: bool = False,
        vocabulary: Vocabulary | None = None,
    ) -> str:
        started = time.perf_counter()
        text = await self._inner.transcribe(audio, partial=partial, vocabulary=vocabulary)
        seconds = time.perf_counter() - started
        self._metrics.stt_seconds.labels("partial" if partial else "final").observe(seconds)
        return text

    async def first_look(
        self, audio: np.ndarray, *, vocabulary: Vocabulary | None = None
    ) -> FirstLook:
        """The inner recognizer's first look, or its whole final when it has only one."""
        if not isinstance(self._inner, TwoLookStt):
            return FirstLook(await self.transcribe(audio, vocabulary=vocabulary))
        started = time.perf_counter()
        first = await self._inner.first_look(audio, vocabulary=vocabulary)
        self._metrics.stt_seconds.labels("final").observe(time.perf_counter() - started)
        return first

    async def second_look(
        self, audio: np.ndarray, first: FirstLook, *, vocabulary: Vocabulary | None = None
    ) -> str:
        if not first.doubtful or not isinstance(self._inner, TwoLookStt):
            return first.text
        started = time.perf_counter()
        text = await self._inner.second_look(audio, first, vocabulary=vocabulary)
        label = "slot_look" if first.early else "second_look"
        self._metrics.stt_seconds.labels(label).observe(time.perf_counter() - started)
        return text


class TimedTts:
    """A ``TtsProvider`` that records time to first audio of every sentence; local voices
    synthesize in the answer's turn of the table's CPU scheduler."""

    def __init__(
        self, inner: TtsProvider, metrics: Metrics, scheduler: CpuScheduler | None = None
    ) -> None:
        self.inner = inner
        self._metrics = metrics
        self._scheduler = scheduler or CpuScheduler()

    async def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        resource = None if voice.provider == "openai" else "tts"  # a remote voice costs no CPU
        async with gated(self._scheduler, Work.ANSWER, resource):
            started = time.perf_counter()
            first = True
            stream = self.inner.synthesize(text, voice)
            try:
                async for chunk in stream:
                    if first:
                        first = False
                        self._metrics.tts_seconds.observe(time.perf_counter() - started)
                    yield chunk
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()


class StreamClock:
    """Wall time at which each stretch of a lane's audio was pushed (last ~30 s kept).

    ``record(wall)`` after each frame the lane takes; ``wall_at(stream_time)`` finds when the
    frame holding that audio instant arrived. Frames are recorded on the socket thread (heard),
    the loop (pushed) or the lane's worker (silence it fed itself), so both are locked.
    """

    def __init__(self, keep_s: float = 30.0, frame_s: float = 0.02) -> None:
        self._stream: deque[float] = deque(maxlen=int(keep_s / frame_s))
        self._wall: deque[float] = deque(maxlen=int(keep_s / frame_s))
        self.pushed_s = 0.0
        self._frame_s = frame_s
        self._lock = threading.Lock()

    def record(self, wall: float, frames: int = 1) -> None:
        with self._lock:
            for _ in range(frames):
                self.pushed_s += self._frame_s
                self._stream.append(self.pushed_s)
                self._wall.append(wall)

    def wall_at(self, stream_time: float) -> float | None:
        with self._lock:
            if not self._stream:
                return None
            index = bisect.bisect_left(self._stream, stream_time - 1e-9)
            if index >= len(self._stream):
                return self._wall[-1]
            if index == 0 and stream_time < self._stream[0] - self._frame_s:
                return None  # older than what we kept
            return self._wall[index]
