"""Audio formats at the edges of the speech stack and the one resampler between them.

Discord hands us 20 ms frames of 48 kHz stereo s16le; Whisper and the VADs want 16 kHz mono;
TTS engines produce 22.05 kHz (Piper) or 24 kHz (OpenAI) mono. Each edge resamples exactly once
with ``soxr`` streaming resamplers, so chunk boundaries leave no clicks.
"""

from __future__ import annotations

import logging

import numpy as np
import soxr

from campaigns.basics import AudioChunk

__all__ = [
    "CHANNELS",
    "FRAME_BYTES",
    "FRAME_MS",
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "SILENCE_FRAME",
    "STT_FRAME_BYTES",
    "STT_SAMPLE_RATE",
    "InputResampler",
    "OutputResampler",
    "SttInput",
    "float_to_pcm16",
    "pcm16_to_float",
    "stereo_frames_from_mono",
]

log = logging.getLogger(__name__)

SAMPLE_RATE = 48_000
"""Discord's rate, and the mixer's."""
CHANNELS = 2
FRAME_MS = 20
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000
"""Samples per channel in one 20 ms frame (960)."""
FRAME_BYTES = FRAME_SAMPLES * CHANNELS * 2
"""Bytes in one 20 ms 48 kHz stereo s16le frame (3840)."""
SILENCE_FRAME = bytes(FRAME_BYTES)
STT_SAMPLE_RATE = 16_000
"""What Whisper and the VADs consume (mono float32)."""
STT_FRAME_BYTES = STT_SAMPLE_RATE * FRAME_MS // 1000 * 2
"""Bytes in one 20 ms 16 kHz mono s16le frame (640): what the receiver decodes for STT."""


_INT16_SCALE = np.float32(1 / 32768)


def pcm16_to_float(pcm: bytes) -> np.ndarray:
    """s16le bytes -> float32 in [-1, 1], in one operation (on a live lane each is cold)."""
    return np.frombuffer(pcm, dtype="<i2") * _INT16_SCALE


def float_to_pcm16(samples: np.ndarray) -> bytes:
    """float in [-1, 1] -> s16le bytes (clipped)."""
    pcm: bytes = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    return pcm


def stereo_frames_from_mono(mono: np.ndarray) -> bytes:
    """int16 mono at 48 kHz -> interleaved stereo s16le bytes."""
    return np.repeat(mono.astype("<i2"), 2).tobytes()


class InputResampler:
    """48 kHz stereo s16le frames -> 16 kHz mono float32, streaming (state kept across frames)."""

    def __init__(self) -> None:
        self._stream = soxr.ResampleStream(SAMPLE_RATE, STT_SAMPLE_RATE, 1, dtype="float32")

    def process(self, pcm: bytes, *, last: bool = False) -> np.ndarray:
        stereo = np.frombuffer(pcm, dtype="<i2").reshape(-1, CHANNELS).astype(np.float32)
        mono = stereo.mean(axis=1) / 32768.0
        out: np.ndarray = self._stream.resample_chunk(mono, last=last)
        return out


class SttInput:
    """20 ms frames in either format -> 16 kHz mono float32 for the VAD and the recognizer.

    Discord-format frames (48 kHz stereo, ``FRAME_BYTES``) are resampled once; frames the
    receiver already decoded at 16 kHz mono (``STT_FRAME_BYTES``) only change type. Frames of
    both kinds may follow each other (e.g. silence filled in by another part).
    """

    def __init__(self) -> None:
        self._resampler = InputResampler()

    def process(self, frames: list[bytes], *, last: bool = False) -> np.ndarray:
        pieces: list[np.ndarray] = []
        run: list[bytes] = []
        for frame in frames:
            if run and len(frame) != len(run[0]):
                pieces.append(self._convert(run))
                run = []
            run.append(frame)
        if run:
            pieces.append(self._convert(run))
        if last:
            pieces.append(self._resampler.process(b"", last=True))
        if not pieces:
            return np.zeros(0, dtype=np.float32)
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def _convert(self, run: list[bytes]) -> np.ndarray:
        pcm = b"".join(run)
        if len(run[0]) == STT_FRAME_BYTES:
            return pcm16_to_float(pcm)
        return self._resampler.process(pcm)


class OutputResampler:
    """Mono s16le at any rate -> 48 kHz mono int16, streaming (the mixer duplicates to stereo).

    A new source rate (e.g. pitch-shifted chunks) restarts the stream, which is correct because
    rates only change between sentences.
    """

    def __init__(self) -> None:
        self._rate: int | None = None
        self._stream: soxr.ResampleStream | None = None

    def process(self, chunk: AudioChunk) -> np.ndarray:
        samples = np.frombuffer(chunk.pcm, dtype="<i2")
        if chunk.sample_rate == SAMPLE_RATE:
            return samples.astype(np.int16)
        tail = np.zeros(0, dtype=np.int16)
        if chunk.sample_rate != self._rate:
            tail = self.flush()
            self._rate = chunk.sample_rate
            self._stream = soxr.ResampleStream(chunk.sample_rate, SAMPLE_RATE, 1, dtype="int16")
        assert self._stream is not None
        out = self._stream.resample_chunk(samples)
        return np.concatenate([tail, out]) if tail.size else out

    def flush(self) -> np.ndarray:
        """Drain the resampler's delay line (call after the last chunk)."""
        if self._stream is None:
            return np.zeros(0, dtype=np.int16)
        out: np.ndarray = self._stream.resample_chunk(np.zeros(0, dtype=np.int16), last=True)
        self._stream = None
        self._rate = None
        return out
