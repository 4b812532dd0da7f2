"""Early transcripts: recognize an utterance when the player pauses, not after the hangover.

The lane ends an utterance after ``hangover_ms`` of silence and only then starts its final
transcription. When the player pauses (``PauseDetector``), the session transcribes the audio it
already has; if the lane then confirms the end of the utterance (``SpeechEnded``) with no speech
in between, that transcript is routed at once and the lane's final only double-checks it. The
audio is the same, so the words are the same, and the final's recognition time comes off every
turn's latency.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import soxr

from bot.speech import SAMPLE_RATE, STT_SAMPLE_RATE, SttProvider, Vocabulary

__all__ = ["EarlyTranscript", "FrameTail", "transcribe_early"]

_PREROLL_S = 0.3
_KEEP_FRAMES = 1500  # 30 s of 20 ms frames


@dataclass(slots=True)
class FrameTail:
    """The last ~30 s of one speaker's frames with the stream time at each frame's end."""

    frames: deque[tuple[float, bytes]] = field(default_factory=lambda: deque(maxlen=_KEEP_FRAMES))

    def add(self, stream_end: float, frame: bytes) -> None:
        self.frames.append((stream_end, frame))

    def since(self, stream_time: float) -> list[bytes]:
        start = stream_time - _PREROLL_S
        return [frame for end, frame in self.frames if end > start]


@dataclass(frozen=True, slots=True)
class EarlyTranscript:
    utterance_id: int
    text: str
    compute_ms: float


def _to_stt_audio(frames: list[bytes]) -> np.ndarray:
    """48 kHz stereo s16le -> 16 kHz mono float32 (one resample, as the lane does)."""
    stereo = np.frombuffer(b"".join(frames), dtype="<i2").reshape(-1, 2).astype(np.float32)
    mono = stereo.mean(axis=1) / 32768.0
    return soxr.resample(mono, SAMPLE_RATE, STT_SAMPLE_RATE).astype(np.float32)


async def transcribe_early(
    stt: SttProvider,
    frames: list[bytes],
    utterance_id: int,
    vocabulary: Vocabulary | None,
) -> EarlyTranscript:
    """What the player said up to the pause, with the lane's vocabulary correction."""
    started = time.perf_counter()
    audio = await asyncio.to_thread(_to_stt_audio, frames)
    text = await stt.transcribe(audio, partial=False, vocabulary=vocabulary)
    text = " ".join(text.split())
    if vocabulary:
        text = vocabulary.correct(text)
    return EarlyTranscript(utterance_id, text, (time.perf_counter() - started) * 1000.0)
