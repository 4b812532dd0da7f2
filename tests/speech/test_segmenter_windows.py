"""Waits counted in VAD windows end at the window nearest to them (real Silero, Piper lines)."""

from __future__ import annotations

import numpy as np
import soxr

from bot.config import VadConfig
from bot.rehearsal.bench_scenes import FAST_LINES
from bot.speech import PiperTts
from bot.speech.segmenter import SegmentEnd, Segmenter, SegmentPause
from bot.speech.vad import SileroVad

from .speech_helpers import piper_pcm


def _heard(piper: PiperTts, text: str) -> np.ndarray:
    pcm, rate = piper_pcm(piper, text)
    speech = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768, rate, 16000)
    silence = np.zeros(16000, np.float32)
    return np.concatenate([silence, speech.astype(np.float32), silence])


def test_pauses_and_ends_come_at_the_nearest_window(piper: PiperTts) -> None:
    """Silence is a difference of stream times: 0.0639999 s once cost a third window, so 7 of
    48 lines were judged at 96 ms instead of 64; and a 200 ms wait took 224 ms (7 windows)."""
    vad = SileroVad()
    for text in FAST_LINES:
        segmenter = Segmenter(vad, VadConfig(), hangover_ms=200, pause_ms=64)
        events = segmenter.process(_heard(piper, text))
        pauses = [e.stream_time - e.voiced_end for e in events if isinstance(e, SegmentPause)]
        ends = [e for e in events if isinstance(e, SegmentEnd)]
        assert pauses and all(abs(p - 0.064) < 0.001 for p in pauses), (text, pauses)
        assert ends and all(abs(e.silence_s - 0.192) < 0.001 for e in ends), (text, ends)
