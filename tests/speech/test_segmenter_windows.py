"""Waits counted in VAD windows end at the window nearest to them (real Silero, Piper lines)."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from bot.audio.speech import PiperTts
from bot.audio.speech.segmenter import SegmentEnd, Segmenter, SegmentPause
from bot.audio.speech.vad import SileroVad
from bot.bench.e2e_scenes import FAST_LINES, TABLE_TALK
from bot.settings.config import TurnConfig, VadConfig

from .speech_helpers import piper_pcm

pytestmark = pytest.mark.model_verdict

WINDOW_MS = 32  # the VAD decides per 32 ms window


def _heard(piper: PiperTts, text: str) -> np.ndarray:
    pcm, rate = piper_pcm(piper, text)
    speech = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768, rate, 16000)
    silence = np.zeros(16000, np.float32)
    return np.concatenate([silence, speech.astype(np.float32), silence])


def test_pauses_and_ends_come_at_the_nearest_window(piper: PiperTts) -> None:
    """Silence is a difference of stream times: one rounded down (0.0639999 s) must not cost a
    third window, and a 200 ms wait must not take 224 ms (7 windows)."""
    vad = SileroVad()
    for text in FAST_LINES:
        segmenter = Segmenter(vad, VadConfig(), hangover_ms=200, pause_ms=64)
        events = segmenter.process(_heard(piper, text))
        pauses = [e.stream_time - e.voiced_end for e in events if isinstance(e, SegmentPause)]
        ends = [e for e in events if isinstance(e, SegmentEnd)]
        assert pauses and all(abs(p - 0.064) < 0.001 for p in pauses), (text, pauses)
        assert ends and all(abs(e.silence_s - 0.192) < 0.001 for e in ends), (text, ends)


def test_the_shipped_pause_is_the_first_silent_window(piper: PiperTts) -> None:
    """The words that end a turn are heard from the first silent window on, so they are in
    while its ``complete_ms`` pass. Dips inside a line are judged too, but few: at most four
    pauses a line on the FAST and table-talk lines."""
    pause_ms = TurnConfig().pause_ms
    assert pause_ms == WINDOW_MS
    vad = SileroVad()
    for text in [*FAST_LINES, *(line for _, line in TABLE_TALK)]:
        segmenter = Segmenter(vad, VadConfig(), hangover_ms=1000, pause_ms=pause_ms)
        events = segmenter.process(_heard(piper, text))
        pauses = [e for e in events if isinstance(e, SegmentPause)]
        (end,) = [e for e in events if isinstance(e, SegmentEnd)]
        assert all(abs(p.stream_time - p.voiced_end - 0.032) < 0.001 for p in pauses), text
        assert 1 <= len(pauses) <= 4, (text, len(pauses))
        assert abs(pauses[-1].voiced_end - end.end) < 0.001, text  # the last one ends the line
