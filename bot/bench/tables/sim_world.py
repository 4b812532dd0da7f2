"""The world around ``glyphoxa bench tables``' simulated tables: the configuration, the model
servers and the bare clock in processes of their own, and the players' line as Opus frames."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError

__all__ = ["EXAMPLE", "LINE", "bench_config", "clock_probe", "model_servers", "player_line"]

EXAMPLE = Path(__file__).resolve().parents[3] / "campaigns" / "example"
LINE = "Bartok, I would like a room for the night."
"""A line Smart Turn hears as finished wherever the pause falls (after Opus, at every 10 ms
alignment). A line whose score depends on the alignment ends its turn after 200 or 500 ms by
chance, and the 10 % latency rule would then measure that coin rather than the load. How a
pause is judged is `bench e2e`'s subject; this bench measures capacity."""
_TAIL_SILENCE_FRAMES = 40  # the lane ends an utterance on 500 ms of quiet frames
_VOICED = 500  # int16 amplitude above which a sample counts as voiced (as rehearsal does)


def bench_config(urls: dict[str, str], folder: Path) -> GlyphoxaConfig:
    return GlyphoxaConfig.model_validate(
        {
            "providers": {
                "llm": {"name": "openai", "base_url": urls["llm"], "model": "instant",
                        "api_key": "instant"},
                "stt": {"name": "openai", "base_url": urls["audio"], "model": "whisper-1"},
                "tts": {"name": "openai", "base_url": urls["audio"], "model": "tts-1",
                        "options": {"all_voices": True}},
            },
            "campaign": {"path": str(EXAMPLE)},
            "memory": {"url": f"sqlite+aiosqlite:///{folder / 'memory.db'}"},
            "tools": {"sandbox_dir": str(folder / "files"),
                      "image_output_dir": str(folder / "images"),
                      "calibration_path": str(folder / "calibration.json")},
        }
    )  # fmt: skip


@contextlib.asynccontextmanager
async def model_servers() -> Any:
    """The instant LLM and speech servers in a child process; their base URLs."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.bench.doubles.instant_servers", "--seconds-per-char", "0.04",
        "--transcript", LINE,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        if not line:
            raise GlyphoxaError("the instant model servers did not start")
        yield json.loads(line)
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 10)
        except TimeoutError:
            child.kill()
            await child.wait()


@contextlib.asynccontextmanager
async def clock_probe() -> Any:
    """A bare 20 ms clock in a child process; ``await probe()`` -> its misses since last time."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.bench.doubles.clock_probe",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def probe() -> dict[str, float]:
        stdin.write(b"report\n")
        await stdin.drain()
        line = await asyncio.wait_for(stdout.readline(), 10)
        return dict(json.loads(line))

    try:
        yield probe
    finally:
        stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 10)
        except TimeoutError:
            child.kill()
            await child.wait()


async def player_line() -> tuple[list[bytes], int]:
    """The players' line as Opus frames (espeak-ng, else Piper) and how many are voiced."""
    import discord.opus

    from bot.audio.speech import EspeakTts, PiperTts
    from bot.audio.voice.opus_decode import ensure_opus_loaded
    from campaigns.providers.voices import VoiceSettings

    ensure_opus_loaded()
    pieces: list[np.ndarray] = []
    try:
        async for chunk in EspeakTts().synthesize(LINE, VoiceSettings(provider="espeak")):
            pieces.append(_to_48k(chunk.pcm, chunk.sample_rate))
    except GlyphoxaError:
        pieces = []
        async for chunk in PiperTts().synthesize(LINE, VoiceSettings(provider="piper")):
            pieces.append(_to_48k(chunk.pcm, chunk.sample_rate))
    mono = np.concatenate(pieces)
    mono = np.concatenate([mono, np.zeros((-len(mono)) % 960, dtype="<i2")])
    stereo = np.repeat(mono[:, None], 2, axis=1).tobytes()
    frames = [stereo[i : i + 3840] for i in range(0, len(stereo), 3840)]
    loud = np.nonzero(np.abs(mono.astype(np.int32)) > _VOICED)[0]
    voiced = int(loud[-1]) // 960 + 1 if loud.size else len(frames)  # the last voiced frame
    frames += [bytes(3840)] * _TAIL_SILENCE_FRAMES
    encoder = discord.opus.Encoder(application="voip")
    return [encoder.encode(pcm, encoder.SAMPLES_PER_FRAME) for pcm in frames], voiced


def _to_48k(pcm: bytes, rate: int) -> np.ndarray:
    mono = np.frombuffer(pcm, "<i2").astype(np.float32)
    line: np.ndarray = np.clip(soxr.resample(mono, rate, 48_000), -32768, 32767).astype("<i2")
    return line
