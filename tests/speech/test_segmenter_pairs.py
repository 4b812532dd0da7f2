"""Heard frames let a lone VAD window mid-word wait for the next (``Segmenter.process(...,
pair=True)``): the same events, and no pause or end judged later (real Silero, Piper lines in
a little background noise, fed as the receiver hands a talking player's packets on: 40 ms at a
time)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import soxr

from bot.audio.speech import PiperTts
from bot.audio.speech.segmenter import SegmentEnd, Segmenter, SegmentEvent, SegmentPause
from bot.audio.speech.vad import SileroVad
from bot.bench.e2e_scenes import FAST_LINES, TABLE_TALK
from bot.settings.config import TurnConfig, VadConfig

from .speech_helpers import piper_pcm

pytestmark = pytest.mark.model_verdict

_CHUNK = 640  # two 20 ms packets at 16 kHz


def _noisy_line(piper: PiperTts, text: str, seed: int) -> np.ndarray:
    pcm, rate = piper_pcm(piper, text)
    speech = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768, rate, 16000)
    quiet = np.zeros(8000, np.float32)
    audio = np.concatenate([quiet, speech.astype(np.float32), quiet, quiet])
    noise = np.random.default_rng(seed).standard_normal(audio.size).astype(np.float32) * 0.003
    return audio + noise


def _run(audio: np.ndarray, pair: bool) -> tuple[list[tuple[int, SegmentEvent]], Segmenter]:
    pause_ms = TurnConfig().pause_ms
    segmenter = Segmenter(SileroVad(), VadConfig(), hangover_ms=1000, pause_ms=pause_ms)
    out: list[tuple[int, SegmentEvent]] = []
    for chunk, start in enumerate(range(0, audio.size, _CHUNK)):
        out += [(chunk, e) for e in segmenter.process(audio[start : start + _CHUNK], pair=pair)]
    return out, segmenter


def _key(event: SegmentEvent) -> Any:
    if isinstance(event, SegmentEnd):
        return (type(event), event.utterance_id, event.onset, event.end, event.audio.tobytes())
    return event


def test_paired_windows_give_the_same_events_and_judge_every_pause_on_time(
    piper: PiperTts,
) -> None:
    waited = ran = 0
    for seed, text in enumerate([*FAST_LINES, *(line for _, line in TABLE_TALK)]):
        audio = _noisy_line(piper, text, seed)
        alone, _ = _run(audio, pair=False)
        paired, segmenter = _run(audio, pair=True)
        assert [_key(e) for _, e in paired] == [_key(e) for _, e in alone], text
        judged = [(c, _key(e)) for c, e in alone if isinstance(e, SegmentPause | SegmentEnd)]
        assert judged and judged == [
            (c, _key(e)) for c, e in paired if isinstance(e, SegmentPause | SegmentEnd)
        ], text
        waited += segmenter.paired
        ran += audio.size // segmenter.window_samples
    assert waited >= 0.08 * ran, (waited, ran)  # 241 of 2164 windows, silence included
