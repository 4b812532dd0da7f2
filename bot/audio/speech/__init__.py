"""The speech stack: per-speaker lanes (VAD + streaming STT), NPC voices, mixer and barge-in.

Transport-agnostic (no ``discord`` import): Discord, rehearsal and tests feed the same frames.
It imports nothing from ``npcs`` either (a contract in pyproject.toml): what it shares with
the engines (voices, provider clients, usage) lives below both, in ``campaigns.providers``.

Input:  ``SpeakerLane(speaker, stt=..., turn_model=..., scheduler=...)``; ``lane.push(frame)``
        with 20 ms frames of 48 kHz stereo s16le (``FRAME_BYTES`` = 3840) or 16 kHz mono
        (``STT_FRAME_BYTES`` = 640) from any thread; ``async for event in lane`` yields
        ``SpeechStarted``, ``SpeechProgress``, ``PartialTranscript``, ``TurnCheck`` (a judged
        pause), ``SpeechEnded``, then ``FinalTranscript`` or ``Backchannel``.
        ``lane.end_input()`` / ``await lane.aclose()``. ``CpuScheduler`` orders the CPU work.
STT:    ``FasterWhisperStt`` (local, default tiny.en), ``OpenAiStt``; ``Vocabulary`` for names.
TTS:    ``PiperTts``, ``OpenAiTts``, ``EspeakTts`` or ``VoiceRouter`` (by ``voice.provider``):
        ``synthesize(text, voice) -> AsyncIterator[AudioChunk]`` (``campaigns.basics``; the
        voice is a ``campaigns.providers.voices.VoiceSettings``); ``speak_text(handle, tts,
        voice, sentences)`` speaks finished sentences (``npcs.sentences`` splits an answer)
        into a handle (the table pipelines an engine's sentences itself).
Output: ``Mixer.next_frame()`` (never blocks); ``mixer.speak(npc) -> SpeechHandle`` with
        ``feed(chunk, text=...)``, ``finish()``, ``cancel()``, ``played_text``, ``await wait()``;
        ``mixer.ambience.play(path, mood)`` / ``.stop()``; ``BargeInController``; ``WavSink``.
"""

from __future__ import annotations

import os

# CTranslate2 (Whisper) ships libgomp, whose threads spin after every decode on the core the
# LLM and TTS need next; libgomp reads this once, when it loads, so it is set before any import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bot.audio.speech.ambience import AmbiencePlayer, decode_audio_file
from bot.audio.speech.audio import (
    CHANNELS,
    FRAME_BYTES,
    FRAME_MS,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    SILENCE_FRAME,
    STT_FRAME_BYTES,
    STT_SAMPLE_RATE,
)
from bot.audio.speech.backchannel import BackchannelDetector
from bot.audio.speech.barge_in import BargeIn, BargeInController
from bot.audio.speech.events import (
    Backchannel,
    FinalTranscript,
    LaneEvent,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
)
from bot.audio.speech.handle import HandleState, SpeechHandle, SpeechResult
from bot.audio.speech.lane import SpeakerLane
from bot.audio.speech.mixer import Mixer
from bot.audio.speech.protocols import SttProvider, TtsProvider, VadModel
from bot.audio.speech.sinks import WavSink
from bot.audio.speech.stt_openai import OpenAiStt
from bot.audio.speech.stt_whisper import FasterWhisperStt, resolve_whisper_model
from bot.audio.speech.tts import VoiceRouter, speak_text
from bot.audio.speech.tts_espeak import EspeakTts
from bot.audio.speech.tts_openai import OpenAiTts
from bot.audio.speech.tts_piper import PiperTts
from bot.audio.speech.vad import SileroVad, WebRtcVad, create_vad
from bot.audio.speech.vocabulary import Vocabulary

__all__ = [
    "CHANNELS",
    "FRAME_BYTES",
    "FRAME_MS",
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "SILENCE_FRAME",
    "STT_FRAME_BYTES",
    "STT_SAMPLE_RATE",
    "AmbiencePlayer",
    "Backchannel",
    "BackchannelDetector",
    "BargeIn",
    "BargeInController",
    "EspeakTts",
    "FasterWhisperStt",
    "FinalTranscript",
    "HandleState",
    "LaneEvent",
    "Mixer",
    "OpenAiStt",
    "OpenAiTts",
    "PartialTranscript",
    "PiperTts",
    "SileroVad",
    "SpeakerLane",
    "SpeechEnded",
    "SpeechHandle",
    "SpeechProgress",
    "SpeechResult",
    "SpeechStarted",
    "SttProvider",
    "TtsProvider",
    "VadModel",
    "Vocabulary",
    "VoiceRouter",
    "WavSink",
    "WebRtcVad",
    "create_vad",
    "decode_audio_file",
    "resolve_whisper_model",
    "speak_text",
]
