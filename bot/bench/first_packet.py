"""How soon an NPC's answer leaves after a quiet spell: its first TTS chunk to its first packet.

The production :class:`~bot.audio.voice.playback.Playback` sleeps while the mixer is silent and is
woken by the mixer when audio arrives; this times, over many answers each after an idle
pause of random length (so no phase of a clock is favoured), from ``handle.feed`` of the first
chunk to that audio's Opus packet being sent (encoded by libopus as discord.py does). A
playback on a fixed 20 ms clock (discord.py's ``AudioPlayer``) waits for its next tick
instead: 10 ms on average, up to 20.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import discord.opus
import numpy as np

from bot.audio.speech.mixer import Mixer
from bot.audio.voice.opus_decode import ensure_opus_loaded
from bot.audio.voice.playback import Playback
from campaigns.basics import AudioChunk, percentile

__all__ = ["first_packet_ms"]

_RATE = 48_000


class _TimedOut:
    """A voice connection that encodes what it is given and notes when audio first went."""

    def __init__(self) -> None:
        ensure_opus_loaded()
        self._encoder = discord.opus.Encoder(signal_type="voice")
        self.first_audio_at: float | None = None
        self.sent = threading.Event()

    def connected(self) -> bool:
        return True

    def wait_connected(self, timeout: float) -> bool:
        return True

    def begin(self) -> None:
        """No speaking flag to send here."""

    def end(self) -> None:
        """See :meth:`begin`."""

    def send(self, data: bytes, *, encode: bool) -> None:
        if encode:
            self._encoder.encode(data, self._encoder.SAMPLES_PER_FRAME)
            if self.first_audio_at is None and any(data):
                self.first_audio_at = time.perf_counter()
                self.sent.set()


async def first_packet_ms(answers: int = 200) -> dict[str, float]:
    """p50, p95 and max (ms) over ``answers`` short answers, each after 0.2-0.5 s of quiet."""
    mixer = Mixer()
    out = _TimedOut()
    playback = Playback(mixer, out, name="bench-playback")
    playback.start()
    samples = (8000 * np.sin(np.arange(9600) / 10)).astype("<i2").tobytes()  # 0.2 s
    delays: list[float] = []
    try:
        for _ in range(answers):
            await asyncio.sleep(random.uniform(0.2, 0.5))
            out.first_audio_at = None
            out.sent.clear()
            handle = mixer.speak("Bartok")
            fed = time.perf_counter()
            handle.feed(AudioChunk(samples, _RATE), text="Welcome.")
            handle.finish()
            await asyncio.wait_for(handle.wait(), timeout=5)
            if not await asyncio.to_thread(out.sent.wait, 5) or out.first_audio_at is None:
                raise RuntimeError("playback sent nothing for an answer")
            delays.append((out.first_audio_at - fed) * 1000)
    finally:
        await playback.stop()
    return {
        "p50": percentile(delays, 50),
        "p95": percentile(delays, 95),
        "max": max(delays),
        "n": float(len(delays)),
    }
