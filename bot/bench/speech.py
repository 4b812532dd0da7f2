"""``glyphoxa bench speech``: the speech stack's hot paths on the real local models.

* CPU per active speaker for resample + VAD, frame by frame as a live lane does it (thread CPU
  time per second of audio, as % of one core; goal < 3 %).
* One decode of a ~3 s Piper utterance over the short encoder window (5 s: what partials and
  most finals use), over 10 s (longer turns) and over Whisper's full 30 s (a final that may
  hide a name).
* Final-transcript latency: a ~3 s Piper utterance pushed in real time through a lane with
  faster-whisper tiny.en; time from the lane's end-of-speech decision to the final transcript
  (and from the last spoken audio, which adds the VAD hangover).
* TTS time to first audio for one sentence (Piper warm, espeak-ng) and the mixer's cost per frame.
* Playback's first packet after a quiet spell, from the NPC's first TTS chunk
  (:mod:`bot.bench.first_packet`).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
import soxr

from bot.audio.speech.audio import FRAME_BYTES, InputResampler
from bot.audio.speech.events import FinalTranscript, SpeechEnded
from bot.audio.speech.lane import SpeakerLane
from bot.audio.speech.mixer import Mixer
from bot.audio.speech.scheduler import CpuScheduler
from bot.audio.speech.segmenter import Segmenter
from bot.audio.speech.stt_whisper import FasterWhisperStt
from bot.audio.speech.tts_espeak import EspeakTts
from bot.audio.speech.tts_piper import PiperTts
from bot.audio.speech.vad import create_vad
from bot.bench.first_packet import first_packet_ms
from bot.bench.result import BenchResult
from bot.settings.config import SpeechConfig, VadConfig
from campaigns.basics import AudioChunk, percentile
from campaigns.providers.voices import VoiceSettings

__all__ = ["run_bench"]

UTTERANCE = "Greymantle, what do you know about the old mill by the river?"
SENTENCE = "Welcome to the Rusty Flagon, stranger."


def _frames(pcm: bytes, rate: int, *, pad_s: float) -> list[bytes]:
    samples = soxr.resample(np.frombuffer(pcm, "<i2").astype(np.float32), rate, 48_000)
    pad = np.zeros(int(pad_s * 48_000), dtype=np.float32)
    mono = np.concatenate([pad, samples, pad])
    mono = np.concatenate([mono, np.zeros((-mono.size) % 960, np.float32)]).astype("<i2")
    stereo = np.repeat(mono, 2).tobytes()
    return [stereo[i : i + FRAME_BYTES] for i in range(0, len(stereo), FRAME_BYTES)]


def _cpu_per_speaker(frames: list[bytes], provider: str) -> float:
    """% of one core for resample + VAD + segmentation, one 20 ms frame at a time."""
    config = VadConfig(provider=provider)  # type: ignore[arg-type]
    resampler, segmenter = InputResampler(), Segmenter(create_vad(config), config)
    start = time.thread_time()
    for frame in frames:
        segmenter.process(resampler.process(frame))
    cpu = time.thread_time() - start
    return cpu / (len(frames) * 0.02) * 100


async def _final_latency(
    stt: FasterWhisperStt, frames: list[bytes], *, others: int = 0
) -> tuple[float, float]:
    """(ms from SpeechEnded to final, ms from the last pushed speech frame to final).

    ``others`` players keep talking (with partials) while the measured player finishes.
    """
    scheduler = CpuScheduler()  # one per table: the lanes share the cores through it
    lane = SpeakerLane("bench", stt=stt, config=SpeechConfig(), scheduler=scheduler)
    company = [
        SpeakerLane(f"other-{i}", stt=stt, config=SpeechConfig(), scheduler=scheduler)
        for i in range(others)
    ]
    chatter = frames[:-76] + frames[25:]  # talking straight through the measured final
    voiced_until = 0.0

    async def feed() -> None:
        nonlocal voiced_until
        start = time.monotonic()
        for index in range(max(len(frames), len(chatter) if others else 0)):
            if index < len(frames):
                lane.push(frames[index])
            for other in company:
                other.push(chatter[index] if index < len(chatter) else frames[-1])
            if index == len(frames) - 76:  # the trailing 1.5 s pad begins here
                voiced_until = time.monotonic()
            await asyncio.sleep(max(0.0, start + (index + 1) * 0.02 - time.monotonic()))
        for other_lane in (lane, *company):
            other_lane.end_input()

    async def drain(other: SpeakerLane) -> None:
        async for _event in other:
            pass

    feeder = asyncio.create_task(feed())
    drains = [asyncio.create_task(drain(other)) for other in company]
    ended: SpeechEnded | None = None
    final: FinalTranscript | None = None
    async for event in lane:
        if isinstance(event, SpeechEnded) and ended is None:
            ended = event
        elif isinstance(event, FinalTranscript) and final is None:
            final = event
    await feeder
    await asyncio.gather(*drains)
    if final is None or ended is None:
        raise RuntimeError("bench utterance produced no final transcript")
    return (final.wall_time - ended.wall_time) * 1000, (final.wall_time - voiced_until) * 1000


async def _first_audio_ms(tts, text: str, voice: VoiceSettings) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    async for _chunk in tts.synthesize(text, voice):
        return (time.monotonic() - start) * 1000
    raise RuntimeError("TTS produced no audio")


def _mixer_us_per_frame(frames: int) -> float:
    mixer = Mixer()
    track = (np.sin(np.arange(48_000 * 2) / 20) * 8000).astype(np.int16)
    mixer.ambience.set_track(np.stack([track, track], axis=1), Path("bench.wav"), "bench")
    handle = mixer.speak("bench")
    tone = (np.sin(np.arange(24_000 * frames // 50 + 24_000) / 7) * 8000).astype("<i2")
    handle.feed(AudioChunk(tone.tobytes(), 24_000), text="bench")
    start = time.perf_counter()
    for _ in range(frames):
        mixer.next_frame()
    return (time.perf_counter() - start) / frames * 1e6


async def run_bench(quick: bool) -> list[BenchResult]:
    piper = PiperTts()
    load_start = time.monotonic()
    await asyncio.to_thread(piper.voice_for, VoiceSettings())
    piper_load_ms = (time.monotonic() - load_start) * 1000
    chunks = [c async for c in piper.synthesize(UTTERANCE, VoiceSettings(speed=0.9))]
    pcm, rate = b"".join(c.pcm for c in chunks), chunks[0].sample_rate
    speech_s = len(pcm) / 2 / rate
    results: list[BenchResult] = []

    cpu_frames = _frames(pcm, rate, pad_s=1.0) * (2 if quick else 6)
    for provider in ("silero", "webrtc"):
        samples = [await asyncio.to_thread(_cpu_per_speaker, cpu_frames, provider)]
        results.append(
            BenchResult(
                name=f"CPU per active speaker, resample + {provider} VAD",
                value=min(samples),
                unit="% of one core",
                method=f"thread CPU time over {len(cpu_frames) * 0.02:.0f} s of speech+silence, "
                "one 20 ms frame at a time",
                goal="< 3 %",
                passed=min(samples) < 3.0,
            )
        )

    stt = await FasterWhisperStt.load()
    audio_16k = soxr.resample(
        np.frombuffer(pcm, "<i2").astype(np.float32) / 32768, rate, 16_000
    ).astype(np.float32)
    full = await FasterWhisperStt.load(window_s=30.0, partial_window_s=30.0)
    # the 10 s window is the one a longer turn takes: the same audio with 3 s of silence after
    longer = np.concatenate([audio_16k, np.zeros(3 * 16_000, dtype=np.float32)])
    decode_ms: dict[str, list[float]] = {"5 s": [], "10 s": [], "30 s": []}  # ms per decode
    try:
        for _ in range(3):
            for window, model, clip in (
                ("5 s", stt, audio_16k), ("10 s", stt, longer), ("30 s", full, audio_16k)
            ):  # fmt: skip
                start = time.monotonic()
                await model.transcribe(clip)
                decode_ms[window].append((time.monotonic() - start) * 1000)
    finally:
        full.close()
    frames = _frames(pcm, rate, pad_s=1.5)
    from_end: list[float] = []
    from_voice: list[float] = []
    for _ in range(2 if quick else 5):
        a, b = await _final_latency(stt, frames)
        from_end.append(a)
        from_voice.append(b)
    results.append(
        BenchResult(
            name=f"final transcript after end of speech ({speech_s:.1f} s utterance) p50",
            value=statistics.median(from_end),
            unit="ms",
            method=f"faster-whisper tiny.en int8, real-time push with partials, n={len(from_end)}",
            extra={
                "p90_ms": percentile(from_end, 90),
                "from_last_voiced_audio_p50_ms": statistics.median(from_voice),
                "hangover_ms": SpeechConfig().vad.hangover_ms,
                "single_decode_p50_ms": statistics.median(decode_ms["5 s"]),
            },
        )
    )
    results.append(
        BenchResult(
            name=f"transcript decode over the 5 s window ({speech_s:.1f} s of audio) p50",
            value=statistics.median(decode_ms["5 s"]),
            unit="ms",
            method="faster-whisper tiny.en int8, n=3; a longer turn's 10 s window took "
            f"{statistics.median(decode_ms['10 s']):.0f} ms and Whisper's full 30 s window (a "
            f"final that may hide a name is heard again so) "
            f"{statistics.median(decode_ms['30 s']):.0f} ms",
            extra={
                "window_10s_decode_p50_ms": statistics.median(decode_ms["10 s"]),
                "full_window_decode_p50_ms": statistics.median(decode_ms["30 s"]),
            },
        )
    )

    if not quick:
        crowded = [(await _final_latency(stt, frames, others=2))[0] for _ in range(3)]
        results.append(
            BenchResult(
                name="final transcript after end of speech, 2 other players talking, p50",
                value=statistics.median(crowded),
                unit="ms",
                method="as above, two more lanes with partials on the same model, n=3",
                extra={"max_ms": max(crowded)},
            )
        )

    voice = VoiceSettings()
    ttfa = [await _first_audio_ms(piper, SENTENCE, voice) for _ in range(3 if quick else 10)]
    results.append(
        BenchResult(
            name="TTS time to first audio, Piper (warm), one sentence, p50",
            value=statistics.median(ttfa),
            unit="ms",
            method=f"joe-medium ONNX, {len(SENTENCE)} chars, n={len(ttfa)}",
            extra={"p90_ms": percentile(ttfa, 90), "cold_voice_load_ms": piper_load_ms},
        )
    )
    if shutil.which("espeak-ng"):
        espeak = EspeakTts()
        espeak_voice = VoiceSettings(provider="espeak")
        samples = [await _first_audio_ms(espeak, SENTENCE, espeak_voice) for _ in range(5)]
        results.append(
            BenchResult(
                name="TTS time to first audio, espeak-ng, one sentence, p50",
                value=statistics.median(samples),
                unit="ms",
                method="subprocess, first 50 ms of PCM from stdout, n=5",
            )
        )
    frames_n = 500 if quick else 5000
    results.append(
        BenchResult(
            name="mixer next_frame (voice + ambience)",
            value=await asyncio.to_thread(_mixer_us_per_frame, frames_n),
            unit="us/frame",
            method=f"{frames_n} frames, 24 kHz voice resampled + looping ambience, ducked",
            goal="< 2000 us (10 % of the 20 ms budget)",
        )
    )
    answers = 50 if quick else 200
    first = await first_packet_ms(answers)
    results.append(
        BenchResult(
            name="playback: first packet of an answer after idle, p50",
            value=first["p50"],
            unit="ms",
            method=f"{answers} answers, each after 0.2-0.5 s of quiet: the NPC's first TTS chunk "
            "-> its Opus packet sent by the production playback thread (a fixed 20 ms clock, "
            "as discord.py's AudioPlayer, waits 10 ms on average, up to 20)",
            goal="< 5 ms",
            passed=first["p50"] < 5.0,
            extra={"p95_ms": first["p95"], "max_ms": first["max"]},
        )
    )
    return results
