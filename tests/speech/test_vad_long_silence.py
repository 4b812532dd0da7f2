"""Silero VAD after a long stretch of digital silence (a rehearsal player who waits their turn)."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from bot.audio.speech import PiperTts
from bot.audio.speech.segmenter import Segmenter, SegmentStart
from bot.audio.speech.vad import SileroVad
from bot.settings.config import VadConfig
from campaigns.providers.voices import VoiceSettings

from .speech_helpers import piper_pcm

pytestmark = pytest.mark.model_verdict


@pytest.mark.parametrize("silence_s", [1, 40])
def test_a_low_voice_is_heard_from_its_first_word_after_long_silence(
    piper: PiperTts, silence_s: int
) -> None:
    """Before the fix, 20 s or more of zeros left the model's state so drifted that the onset
    came ~1 s late: "Greymantle, take your time" was transcribed as "Take your time"."""
    pcm, rate = piper_pcm(
        piper, "Greymantle, take your time.", VoiceSettings(speed=0.95, pitch_shift=-3)
    )
    speech = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768, rate, 16000)
    audio = np.concatenate([np.zeros(16000 * silence_s, np.float32), speech.astype(np.float32)])
    segmenter = Segmenter(SileroVad(), VadConfig())
    onsets = [
        event.onset
        for start in range(0, audio.size, 320)
        for event in segmenter.process(audio[start : start + 320])
        if isinstance(event, SegmentStart)
    ]
    assert onsets and onsets[0] - silence_s < 0.3, onsets
