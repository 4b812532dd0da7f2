"""MixerSource: always a full 20 ms frame, never blocking, never ending playback."""

from __future__ import annotations

import time

from bot.config import GlyphoxaConfig
from bot.speech import Mixer
from bot.voice.playback import FRAME_BYTES, MixerSource


def test_reads_the_real_mixer_without_blocking() -> None:
    source = MixerSource(Mixer(GlyphoxaConfig().speech).next_frame)
    assert not source.is_opus()
    started = time.perf_counter()
    frames = [source.read() for _ in range(50)]
    assert time.perf_counter() - started < 0.5  # far below the 1 s these frames last
    assert all(len(f) == FRAME_BYTES for f in frames)
    assert frames[0] == bytes(FRAME_BYTES)  # idle mixer: silence, not b"" (which ends playback)


def test_failures_and_odd_sizes_become_full_frames() -> None:
    calls = iter([b"\x01" * 10, b"\x02" * (FRAME_BYTES + 8)])

    def next_frame() -> bytes:
        try:
            return next(calls)
        except StopIteration:
            raise RuntimeError("mixer broke") from None

    source = MixerSource(next_frame)
    short, long, broken = source.read(), source.read(), source.read()
    assert short == b"\x01" * 10 + bytes(FRAME_BYTES - 10)
    assert long == b"\x02" * FRAME_BYTES
    assert broken == bytes(FRAME_BYTES) and source.failures == 1
