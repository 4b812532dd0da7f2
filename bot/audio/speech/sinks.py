"""Where mixer frames go when there is no Discord: a WAV file, on a clock or as fast as possible."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import wave
from pathlib import Path
from types import TracebackType

from bot.audio.speech.audio import CHANNELS, FRAME_MS, SAMPLE_RATE
from bot.audio.speech.mixer import Mixer

__all__ = ["WavSink"]

log = logging.getLogger(__name__)


class WavSink:
    """Pull frames from a mixer into a 48 kHz stereo WAV file.

    ``render(n)`` pulls n frames at once (rehearsal, tests: faster than real time);
    ``start()`` runs a 20 ms clock thread like Discord's player would; ``drain()`` renders until
    every queued NPC has spoken, waiting (not writing silence) while TTS is behind.
    """

    def __init__(self, mixer: Mixer, path: str | Path) -> None:
        self.mixer = mixer
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._wav = wave.open(str(self.path), "wb")
        self._wav.setnchannels(CHANNELS)
        self._wav.setsampwidth(2)
        self._wav.setframerate(SAMPLE_RATE)
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.frames_written = 0

    @property
    def duration_s(self) -> float:
        return self.frames_written * FRAME_MS / 1000

    def render(self, n_frames: int) -> int:
        """Pull and write ``n_frames`` frames now; returns how many were written."""
        with self._write_lock:
            frames = [self.mixer.next_frame() for _ in range(n_frames)]
            self._wav.writeframes(b"".join(frames))
            self.frames_written += n_frames
        return n_frames

    async def drain(self, *, max_seconds: float = 300.0, stall_timeout_s: float = 30.0) -> int:
        """Render while an NPC holds or waits for the floor; returns frames written."""
        written = 0
        stalled_since: float | None = None
        while self.mixer.busy and written * FRAME_MS / 1000 < max_seconds:
            if self.mixer.starved:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > stall_timeout_s:
                    log.warning("TTS produced nothing for %.0f s; giving up", stall_timeout_s)
                    break
                await asyncio.sleep(0.005)
                continue
            stalled_since = None
            written += self.render(1)
            if written % 50 == 0:
                await asyncio.sleep(0)
        return written

    def start(self) -> None:
        """Pull on a real-time 20 ms clock in a thread (drift-corrected)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._clock, name="wav-sink-clock", daemon=True)
        self._thread.start()

    def _clock(self) -> None:
        period = FRAME_MS / 1000
        next_tick = time.perf_counter()
        while not self._stop.is_set():
            self.render(1)
            next_tick += period
            delay = next_tick - time.perf_counter()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -0.2:
                next_tick = time.perf_counter()  # fell far behind: do not burst to catch up

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def close(self) -> None:
        self.stop()
        with self._write_lock:
            self._wav.close()

    def __enter__(self) -> WavSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
