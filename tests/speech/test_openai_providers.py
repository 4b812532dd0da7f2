"""OpenAI STT/TTS providers through the real SDK against a local server speaking that protocol."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import soxr
from pydantic import SecretStr

from bot.audio.speech import (
    EspeakTts,
    FasterWhisperStt,
    OpenAiStt,
    OpenAiTts,
    PiperTts,
    Vocabulary,
    VoiceRouter,
)
from campaigns.basics import GlyphoxaError
from campaigns.providers.voices import VoiceSettings

from .local_openai_audio import LocalOpenAiAudio
from .speech_helpers import heard_as, piper_pcm


def player_16k(piper: PiperTts, text: str) -> np.ndarray:
    pcm, rate = piper_pcm(piper, text)
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    return soxr.resample(audio, rate, 16_000).astype(np.float32)


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_transcription(
    whisper: FasterWhisperStt, piper: PiperTts, stream: bool
) -> None:
    text = "Where does the old road lead?"
    audio = player_16k(piper, text)
    async with LocalOpenAiAudio(whisper, piper) as server:
        stt = OpenAiStt(
            base_url=server.base_url, api_key=SecretStr("sk-test-secret"), stream=stream
        )
        assert "sk-test-secret" not in repr(stt)
        heard = await stt.transcribe(audio, vocabulary=Vocabulary(["Greymantle"]))
        assert await stt.transcribe(audio, partial=True) == ""  # partials off: no request
        server.fail_with = 500
        with pytest.raises(GlyphoxaError, match="transcription service failed"):
            await stt.transcribe(audio)
    assert heard_as(text, heard, 0.1)
    request = server.requests[0]
    assert request["_rate"] == 16_000 and request["_channels"] == 1
    assert request["model"] == "gpt-4o-mini-transcribe" and request["language"] == "en"
    assert "Greymantle" in request["prompt"]
    assert request["_headers"]["authorization"] == "Bearer sk-test-secret"
    assert request.get("stream") == ("true" if stream else None)


async def test_openai_tts_streams_24khz_pcm(whisper: FasterWhisperStt, piper: PiperTts) -> None:
    text = "The gates close when the sun goes down."
    async with LocalOpenAiAudio(whisper, piper) as server:
        tts = OpenAiTts(base_url=server.base_url, api_key="sk-x")
        chunks = [c async for c in tts.synthesize(text, VoiceSettings(provider="openai"))]
        shifted = [
            c
            async for c in tts.synthesize(
                text, VoiceSettings(provider="openai", voice="onyx", pitch_shift=-3, speed=1.2)
            )
        ]
        server.fail_with = 503
        router = VoiceRouter({"openai": tts, "espeak": EspeakTts()})
        if EspeakTts().available():
            fallback = [c async for c in router.synthesize(text, VoiceSettings(provider="openai"))]
            assert fallback and fallback[0].sample_rate == 22_050
        with pytest.raises(GlyphoxaError, match="speech service failed"):
            _ = [c async for c in tts.synthesize(text, VoiceSettings(provider="openai"))]
    assert len(chunks) > 3 and {c.sample_rate for c in chunks} == {24_000}
    assert all(len(c.pcm) % 2 == 0 for c in chunks)
    assert shifted[0].sample_rate == round(24_000 * 2 ** (-3 / 12))
    assert server.requests[0]["voice"] == "alloy" and server.requests[1]["voice"] == "onyx"
    assert server.requests[1]["speed"] == 1.2
    audio = np.frombuffer(b"".join(c.pcm for c in chunks), "<i2").astype(np.float32) / 32768
    mono = soxr.resample(audio, 24_000, 16_000).astype(np.float32)
    assert heard_as(text, whisper.transcribe_sync(np.pad(mono, 4000)), 0.1)


async def test_remote_speech_is_priced_per_character_and_per_second(
    whisper: FasterWhisperStt, piper: PiperTts
) -> None:
    """The spend meter counts what the voices and the recognizer sent, at the default prices;
    a voice speaking inside an NPC's turn is counted to that NPC; a failed request is free."""
    from bot.settings.spend import PricingConfig, SpendConfig
    from bot.table.session.spend import SpendMeter
    from campaigns.providers.usage import serving_npc

    text = "The gates close when the sun goes down."
    audio = player_16k(piper, text)
    meter = SpendMeter(PricingConfig(), SpendConfig())
    async with LocalOpenAiAudio(whisper, piper) as server:
        tts = OpenAiTts(base_url=server.base_url, api_key="sk-x")
        stt = OpenAiStt(base_url=server.base_url, api_key="sk-x")
        tts.meter = stt.meter = meter.sink(free=False)

        async def bartok_speaks() -> None:
            serving_npc.set("Bartok")  # what the NPC's turn worker does
            _ = [c async for c in tts.synthesize(text, VoiceSettings(provider="openai"))]

        await asyncio.create_task(bartok_speaks())
        assert await stt.transcribe(audio)
        server.fail_with = 503
        with pytest.raises(GlyphoxaError):
            await stt.transcribe(audio)
    rows = {(r.service, r.npc): r for r in meter.rows.values()}
    voice, ears = rows[("tts", "Bartok")], rows[("stt", "")]
    assert (voice.calls, voice.characters, voice.model) == (1, len(text), "gpt-4o-mini-tts")
    assert voice.cost_usd == pytest.approx(len(text) * 15.00 / 1e6)
    assert ears.calls == 1 and ears.audio_seconds == pytest.approx(len(audio) / 16_000)
    assert ears.cost_usd == pytest.approx(len(audio) / 16_000 / 60 * 0.003)
    summary = meter.summary()
    assert set(summary["npcs"]) == {"Bartok", "players (speech recognition)"}
    assert summary["providers"]["voices gpt-4o-mini-tts"]["usage"] == f"{len(text)} characters"
