"""Synthesized players: each scene line becomes audio in that player's voice, and the
per-speaker timelines hand out one 20 ms frame per tick like the receiver would: 16 kHz mono,
what the bot decodes a player's Opus packets to for the speech lanes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import soxr

from bot.audio.speech import (
    FRAME_MS,
    STT_FRAME_BYTES,
    STT_SAMPLE_RATE,
    PiperTts,
    VoiceRouter,
    decode_audio_file,
)
from bot.audio.speech.protocols import TtsProvider
from bot.frontends.rehearsal.scene import PlayerLine, Scene, player_voice
from campaigns.basics import GlyphoxaError
from campaigns.providers.voices import VoiceSettings

__all__ = ["LineAudio", "SpeakerTimeline", "steady_voices", "synthesize_lines"]

log = logging.getLogger(__name__)

_FRAME_SAMPLES = STT_SAMPLE_RATE * FRAME_MS // 1000
_SILENCE = bytes(STT_FRAME_BYTES)
_VOICED = 500  # int16 amplitude above which a sample counts as voiced (for the true end)


@dataclass(frozen=True, slots=True)
class LineAudio:
    line: PlayerLine
    pcm: bytes
    """16 kHz mono s16le, padded to whole 20 ms frames."""
    voiced_end_s: float
    """Seconds into the line where the last voiced sample is (end of speech)."""

    @property
    def start_frame(self) -> int:
        return round(self.line.at * 1000 / FRAME_MS)

    @property
    def frames(self) -> int:
        return len(self.pcm) // STT_FRAME_BYTES

    @property
    def speech_end_s(self) -> float:
        """Scene time at which the player stops speaking."""
        return self.line.at + self.voiced_end_s


def _to_mono_16k(mono: np.ndarray, rate: int) -> np.ndarray:
    if rate != STT_SAMPLE_RATE:
        mono = soxr.resample(mono.astype(np.float32), rate, STT_SAMPLE_RATE)
    pcm: np.ndarray = np.clip(mono, -32768, 32767).astype(np.int16)
    return pcm


def _finish(line: PlayerLine, mono: np.ndarray) -> LineAudio:
    loud = np.nonzero(np.abs(mono.astype(np.int32)) > _VOICED)[0]
    voiced_end = (loud[-1] + 1) / STT_SAMPLE_RATE if loud.size else 0.0
    pad = (-len(mono)) % _FRAME_SAMPLES
    if pad:
        mono = np.concatenate([mono, np.zeros(pad, dtype=np.int16)])
    return LineAudio(line, mono.astype("<i2").tobytes(), voiced_end)


async def synthesize_lines(
    scene: Scene, tts: TtsProvider, progress: Callable[[str], None] | None = None
) -> list[LineAudio]:
    """Audio for every line: text in the player's voice, or the WAV file resampled. Piper
    speaks the players without its sampled prosody noise, so a line sounds the same at every
    run of the scene (only the table's timing still varies)."""
    tts = steady_voices(tts)
    out: list[LineAudio] = []
    for number, line in enumerate(scene.lines, 1):
        if progress is not None:
            progress(f"synthesizing player lines {number}/{len(scene.lines)}")
        if line.wav is not None:
            stereo = decode_audio_file(scene.wav_path(line))  # 48 kHz stereo int16
            mono = stereo.astype(np.float32).mean(axis=1)
            out.append(_finish(line, _to_mono_16k(mono, 48_000)))
            continue
        assert line.text is not None
        voice = player_voice(scene, line.speaker)
        try:
            pieces = await _synthesize(tts, line.text, voice)
        except GlyphoxaError as error:
            if voice.provider == "piper":
                raise
            # e.g. espeak-ng not installed: the player still speaks, in a shifted Piper voice
            if progress is not None:
                progress(f"  {line.speaker}'s {voice.provider} voice failed ({error}); using Piper")
            pieces = await _synthesize(tts, line.text, _FALLBACK)
        if not pieces:
            raise GlyphoxaError(f"no audio synthesized for {line.speaker}'s line at {line.at:g}s")
        out.append(_finish(line, np.concatenate(pieces)))
    return out


def steady_voices(tts: TtsProvider) -> TtsProvider:
    """``tts`` with its Piper voices made steady (``PiperTts.steady``); other voices as they are
    (espeak-ng is steady already; a remote voice is what its server makes it)."""
    if not isinstance(tts, VoiceRouter):
        return tts.steady() if isinstance(tts, PiperTts) else tts
    piper = tts.providers.get("piper")
    if not isinstance(piper, PiperTts):
        return tts
    providers = {**tts.providers, "piper": piper.steady()}
    return VoiceRouter(providers, fallback=tts.fallback, inventory=tts.inventory)


_FALLBACK = VoiceSettings(provider="piper", speed=0.95, pitch_shift=-5.0)


async def _synthesize(tts: TtsProvider, text: str, voice: VoiceSettings) -> list[np.ndarray]:
    pieces: list[np.ndarray] = []
    async for chunk in tts.synthesize(text, voice):
        mono = np.frombuffer(chunk.pcm, dtype="<i2").astype(np.float32)
        pieces.append(_to_mono_16k(mono, chunk.sample_rate))
    return pieces


class SpeakerTimeline:
    """One player's lines as scheduled on the scene clock; ``frame(k)`` is their k-th frame."""

    def __init__(self, speaker: str) -> None:
        self.speaker = speaker
        self.scheduled: list[tuple[int, LineAudio]] = []

    def add(self, item: LineAudio, start_frame: int) -> None:
        self.scheduled.append((start_frame, item))

    def frame(self, k: int) -> bytes:
        for start, item in reversed(self.scheduled):  # a later line talks over an earlier one
            offset = k - start
            if 0 <= offset < item.frames:
                return item.pcm[offset * STT_FRAME_BYTES : (offset + 1) * STT_FRAME_BYTES]
        return _SILENCE

    @property
    def end_frame(self) -> int:
        return max((start + item.frames for start, item in self.scheduled), default=0)
