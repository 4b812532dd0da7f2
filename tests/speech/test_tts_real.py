"""NPC voices with the real Piper model and espeak-ng, and the sentence pipeline into the mixer."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from bot.audio.speech import (
    EspeakTts,
    FasterWhisperStt,
    PiperTts,
    VoiceRouter,
)
from campaigns.basics import AudioChunk, GlyphoxaError
from campaigns.providers.voices import VoiceSettings

from .speech_helpers import heard_as, requires_espeak

pytestmark = pytest.mark.model_verdict


async def synthesize(tts, text: str, voice: VoiceSettings) -> list[AudioChunk]:  # type: ignore[no-untyped-def]
    return [chunk async for chunk in tts.synthesize(text, voice)]


def to_16k(chunks: list[AudioChunk]) -> np.ndarray:
    pieces = [
        soxr.resample(np.frombuffer(c.pcm, "<i2").astype(np.float32) / 32768, c.sample_rate, 16_000)
        for c in chunks
    ]
    pad = np.zeros(4000, dtype=np.float32)
    return np.concatenate([pad, *pieces, pad]).astype(np.float32)


def duration(chunks: list[AudioChunk]) -> float:
    return sum(c.duration_s for c in chunks)


async def test_piper_speech_transcribes_back(piper: PiperTts, whisper: FasterWhisperStt) -> None:
    text = "The road to the north is dangerous after dark."
    chunks = await synthesize(piper, text, VoiceSettings())
    assert chunks[0].sample_rate == 22_050
    assert heard_as(text, whisper.transcribe_sync(to_16k(chunks)), 0.1)


async def test_piper_speed_and_pitch(piper: PiperTts, whisper: FasterWhisperStt) -> None:
    text = "Gold is heavy, friend."
    normal = duration(await synthesize(piper, text, VoiceSettings()))
    fast = duration(await synthesize(piper, text, VoiceSettings(speed=1.5)))
    # Piper samples phoneme durations with noise, so single runs vary by ~15 %: check the
    # direction and rough size of the change, not an exact ratio.
    assert normal / 1.9 < fast < normal / 1.15
    high = await synthesize(piper, text, VoiceSettings(pitch_shift=4))
    assert high[0].sample_rate == round(22_050 * 2 ** (4 / 12))
    assert duration(high) == pytest.approx(normal, rel=0.25)  # pitch without a tempo change
    # Intelligibility on a longer line: one misheard word of four would already be 25 % WER.
    line = "The road to the north is dangerous after dark."
    shifted = await synthesize(piper, line, VoiceSettings(pitch_shift=4))
    assert heard_as(line, whisper.transcribe_sync(to_16k(shifted)), 0.25)


async def test_missing_piper_model_is_a_clear_error(piper: PiperTts) -> None:
    with pytest.raises(GlyphoxaError, match=r"Piper voice .* not found .*glyphoxa voices"):
        await synthesize(piper, "Hi.", VoiceSettings(voice="/nonexistent/voice.onnx"))


@requires_espeak
async def test_espeak_streams_and_transcribes_back(whisper: FasterWhisperStt) -> None:
    text = "The bridge is closed until morning."
    chunks = await synthesize(EspeakTts(), text, VoiceSettings(provider="espeak"))
    assert len(chunks) > 3 and chunks[0].sample_rate == 22_050
    assert heard_as(text, whisper.transcribe_sync(to_16k(chunks)), 0.25)
    with pytest.raises(GlyphoxaError, match="espeak-ng failed"):
        await synthesize(EspeakTts(), "Hi.", VoiceSettings(provider="espeak", voice="xx-nope"))


@requires_espeak
async def test_router_falls_back_to_espeak(piper: PiperTts) -> None:
    router = VoiceRouter({"piper": piper, "espeak": EspeakTts()})
    chunks = await synthesize(router, "Hello.", VoiceSettings(voice="/nonexistent/voice.onnx"))
    assert chunks and chunks[0].sample_rate == 22_050
    plain = VoiceRouter({"piper": piper, "espeak": EspeakTts()}, fallback=None)
    with pytest.raises(GlyphoxaError):
        await synthesize(plain, "Hello.", VoiceSettings(voice="/nonexistent/voice.onnx"))
