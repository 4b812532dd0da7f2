"""Background music/ambience under the NPC voices, ducked while an NPC speaks.

Files are decoded once, off the event loop, to 48 kHz stereo int16: WAV with the standard
library, everything else (ogg, mp3, flac, ...) with PyAV. Gain changes ramp over one frame so
ducking never clicks.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soxr

from bot.audio.speech.audio import CHANNELS, SAMPLE_RATE
from campaigns.basics import GlyphoxaError

__all__ = ["AmbiencePlayer", "decode_audio_file"]

log = logging.getLogger(__name__)


def decode_audio_file(path: str | Path) -> np.ndarray:
    """Any audio file -> (frames, 2) int16 at 48 kHz. Raises GlyphoxaError if unreadable."""
    path = Path(path)
    if not path.is_file():
        raise GlyphoxaError(f"audio file not found: {path}")
    try:
        if path.suffix.lower() == ".wav":
            return _decode_wav(path)
        return _decode_av(path)
    except GlyphoxaError:
        raise
    except Exception as error:
        raise GlyphoxaError(f"cannot decode audio file {path}: {error}") from None


def _decode_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as wav:
        width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    if width != 2:
        return _decode_av(path)
    samples = np.frombuffer(raw, dtype="<i2").reshape(-1, channels)
    return _to_output(samples, rate)


def _decode_av(path: Path) -> np.ndarray:
    import av  # deferred: only non-WAV ambience needs it

    pieces: list[np.ndarray] = []
    with av.open(str(path)) as container:
        resampler = av.AudioResampler(format="s16", layout="stereo", rate=SAMPLE_RATE)
        for frame in container.decode(audio=0):
            for out in resampler.resample(frame):
                pieces.append(out.to_ndarray().reshape(-1, CHANNELS))
        for out in resampler.resample(None):
            pieces.append(out.to_ndarray().reshape(-1, CHANNELS))
    if not pieces:
        raise GlyphoxaError(f"no audio in {path}")
    return np.concatenate(pieces).astype(np.int16)


def _to_output(samples: np.ndarray, rate: int) -> np.ndarray:
    if samples.shape[1] == 1:
        samples = np.repeat(samples, 2, axis=1)
    elif samples.shape[1] > 2:
        samples = samples[:, :2]
    if rate != SAMPLE_RATE:
        samples = soxr.resample(samples, rate, SAMPLE_RATE)
    return np.ascontiguousarray(samples, dtype=np.int16)


class AmbiencePlayer:
    """One looping track at a time; ``next_block`` is called by the mixer's pull thread."""

    def __init__(
        self,
        *,
        volume: float = 0.25,
        duck: float = 0.4,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self.volume = volume
        self._on_start = on_start
        """Told when a track starts (the mixer wakes a playback that sleeps while silent)."""
        self.duck = duck
        self._lock = threading.Lock()
        self._track: np.ndarray | None = None
        self._pos = 0
        self._loop = True
        self._gain = 0.0
        self.now_playing: tuple[Path, str | None] | None = None
        """(file, mood) of the current track."""

    async def play(self, path: str | Path, mood: str | None = None, *, loop: bool = True) -> None:
        """Decode ``path`` in a worker thread, then crossfade-free switch to it."""
        track = await asyncio.to_thread(decode_audio_file, path)
        self.set_track(track, Path(path), mood, loop=loop)

    def set_track(
        self, track: np.ndarray, path: Path, mood: str | None = None, *, loop: bool = True
    ) -> None:
        with self._lock:
            self._track = track
            self._pos = 0
            self._loop = loop
            self.now_playing = (path, mood)
        log.info("ambience: %s (%s)", path.name, mood or "no mood")
        if self._on_start is not None:
            self._on_start()

    def stop(self) -> None:
        with self._lock:
            self._track = None
            self.now_playing = None

    def next_block(self, n: int, *, ducked: bool) -> np.ndarray | None:
        """(n, 2) int32 samples with gain applied, or None when nothing plays."""
        with self._lock:
            track = self._track
            if track is None or track.shape[0] == 0:
                return None
            block = np.zeros((n, CHANNELS), dtype=np.int32)
            filled = 0
            while filled < n:
                take = min(n - filled, track.shape[0] - self._pos)
                block[filled : filled + take] = track[self._pos : self._pos + take]
                filled += take
                self._pos += take
                if self._pos >= track.shape[0]:
                    if not self._loop:
                        self._track = None
                        self.now_playing = None
                        break
                    self._pos = 0
            target = self.volume * (self.duck if ducked else 1.0)
            ramp = np.linspace(self._gain, target, n, dtype=np.float32)[:, None]
            self._gain = target
        return (block * ramp).astype(np.int32)
