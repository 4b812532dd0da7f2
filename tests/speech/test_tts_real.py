"""NPC voices with the real Piper model and espeak-ng, and the sentence pipeline into the mixer."""

from __future__ import annotations

import asyncio
import wave
from collections.abc import AsyncIterator

import numpy as np
import pytest
import soxr

from bot.speech import (
    EspeakTts,
    FasterWhisperStt,
    Mixer,
    PiperTts,
    TurnTimer,
    VoiceRouter,
    WavSink,
    speak_stream,
)
from campaigns.basics import AudioChunk, GlyphoxaError
from npcs.schema import VoiceSettings

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


async def test_first_sentence_plays_while_the_llm_still_writes(
    piper: PiperTts, whisper: FasterWhisperStt, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    mixer = Mixer()
    first_audio = asyncio.Event()
    handle = mixer.speak("Bartok")

    def audio_arrived() -> None:  # loop thread here: feed() runs on it
        if handle.buffered_samples or handle.playback_started_at:
            first_audio.set()

    mixer.add_listener(audio_arrived)
    timer = TurnTimer("t1", "alice", npc="Bartok")

    async def llm() -> AsyncIterator[str]:
        for token in [
            "Good",
            " evening",
            ", Mr.",
            " Stone",
            "! The",
            " soup",
            " costs",
            " two",
            " coins",
            ". ",
        ]:
            yield token
        # The next sentence only comes once the first is already audio: pipelining or deadlock.
        await asyncio.wait_for(first_audio.wait(), 30)
        for token in ["Ask", " the", " cook", " about", " the", " stew", "."]:
            yield token

    speaking = asyncio.create_task(speak_stream(handle, piper, VoiceSettings(), llm(), timer=timer))
    with WavSink(mixer, tmp_path / "npc.wav") as sink:
        await asyncio.wait_for(first_audio.wait(), 30)
        await asyncio.wait_for(sink.drain(), 60)
        result = await asyncio.wait_for(speaking, 10)
    assert result.played_text == (
        "Good evening, Mr. Stone! The soup costs two coins. Ask the cook about the stew."
    )
    trace = timer.freeze()
    assert trace.first_sentence is not None and trace.first_tts_audio is not None
    assert trace.first_sentence <= trace.first_tts_audio
    with wave.open(str(tmp_path / "npc.wav")) as wav:
        stereo = np.frombuffer(wav.readframes(wav.getnframes()), "<i2").reshape(-1, 2)
    mono = soxr.resample(stereo[:, 0].astype(np.float32) / 32768, 48_000, 16_000)
    assert heard_as(result.full_text, whisper.transcribe_sync(mono.astype(np.float32)), 0.2)
