"""``glyphoxa bench soak``: a whole game night through the real receive path, at accelerated time.

The bot is a real ``discord.Client`` running a real :class:`TableRuntime` against the local
Discord (:mod:`bot.bench.doubles.local_discord`): DAVE group of real davey sessions, real
Opus, discord.py's voice connection, Glyphoxa's receive path, VAD and Whisper, the instant LLM
(:mod:`bot.bench.doubles.instant_llm`), Piper and the mixer. Five synthesized players follow the
script of :mod:`bot.bench.soak.script`. Time is accelerated by skipping the silence between
lines (simulated seconds pass instantly) and speaking at ``speed`` times real time; everything
that reacts to time (VAD endpointing, DAVE key expiry, reconnect backoff) runs on the wall clock.
The idle stretch is the exception: it lasts ``idle_s`` of wall-clock time (20 minutes; 30 s with
``--quick``), behind a voice server that forgets a bot endpoint silent for ``forget_after_s``
(20 s; 10 s with ``--quick``), as NATs and voice servers do. The scripted stall is noticed after
``discord.stall_after_s`` (the default, 20 s; 5 s with ``--quick``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import discord
import numpy as np
import soxr
from pydantic import SecretStr

from bot.audio.speech import PiperTts
from bot.audio.voice.opus_decode import ensure_opus_loaded
from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.result import BenchResult
from bot.bench.soak.night import ANSWER_TIMEOUT_S, Night, Progress, play_script, rss_mb
from bot.bench.soak.report import SoakReport
from bot.bench.soak.script import PLAYERS, Action, Line, night, players_at_start
from bot.frontends.discord_bot.runtime import TableParts, TableRuntime
from bot.settings.config import GlyphoxaConfig
from bot.settings.providers import LlmProvider
from bot.telemetry.metrics import Metrics
from npcs.campaign import load_campaign

__all__ = ["run_bench", "run_soak"]

EXAMPLE = Path(__file__).resolve().parents[3] / "campaigns" / "example"
_FRAME_BYTES = 3840
IDLE_S = 20 * 60.0
QUICK_IDLE_S = 30.0
FORGET_AFTER_S = 20.0
QUICK_FORGET_AFTER_S = 10.0
QUICK_STALL_AFTER_S = 5.0
"""``--quick`` (the CI run) notices its stall sooner; the full night uses the default (20 s)."""


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _player_audio(
    night_lines: list[Line], say: Progress
) -> dict[tuple[str, str], list[bytes]]:
    """Every (player, text) once: Piper (no prosody noise: the same audio every run), 48 kHz
    stereo, Opus-encoded as a Discord client would (20 ms frames, in-band FEC)."""
    ensure_opus_loaded()
    import discord.opus

    tts = PiperTts(variation=0.0)
    wanted = sorted({(line.speaker, line.text) for line in night_lines})
    out: dict[tuple[str, str], list[bytes]] = {}
    for number, (speaker, text) in enumerate(wanted, 1):
        if number % 10 == 1:
            say(f"synthesizing player lines {number}/{len(wanted)}")
        pieces = []
        async for chunk in tts.synthesize(text, PLAYERS[speaker]):
            mono = np.frombuffer(chunk.pcm, dtype="<i2").astype(np.float32)
            pieces.append(soxr.resample(mono, chunk.sample_rate, 48000))
        mono = np.clip(np.concatenate(pieces), -32768, 32767).astype("<i2")
        pcm = np.repeat(mono[:, None], 2, axis=1).tobytes()
        pcm += bytes(-len(pcm) % _FRAME_BYTES)
        encoder = discord.opus.Encoder(application="voip", fec=True)
        frames = [pcm[i : i + _FRAME_BYTES] for i in range(0, len(pcm), _FRAME_BYTES)]
        out[(speaker, text)] = [encoder.encode(f, 960) for f in frames]
    return out


async def _hear_clean(stt: Any, opus: list[bytes]) -> str:
    """The recognizer on a line's own audio, decoded in order without the network."""
    decoder = discord.opus.Decoder()  # type: ignore[no-untyped-call]
    pcm = np.frombuffer(b"".join(decoder.decode(p, fec=False) for p in opus), dtype="<i2")
    mono = pcm.reshape(-1, 2).mean(axis=1).astype(np.float32) / 32768.0
    audio = soxr.resample(mono, 48000, 16000).astype(np.float32)
    pad = np.zeros(8000, dtype=np.float32)  # the half second of quiet a lane's segment has
    return str(await stt.transcribe(np.concatenate([pad, audio, pad])))


def _config(llm_url: str) -> GlyphoxaConfig:
    config = GlyphoxaConfig()
    key = SecretStr("instant")
    llm = LlmProvider(name="openai", base_url=llm_url, model="instant", api_key=key)
    # Turns are matched to the line that named the NPC: no continuations without a name.
    tiers = config.tiers.model_copy(update={"continuation_window_s": 0.0})
    campaign = config.campaign.model_copy(update={"path": str(EXAMPLE), "hot_reload": False})
    return config.model_copy(
        update={
            "providers": config.providers.model_copy(update={"llm": llm}),
            "tiers": tiers,
            "campaign": campaign,
        }
    )


async def run_soak(
    hours: float = 4.0,
    *,
    quick: bool = False,
    speed: float = 2.0,
    idle_s: float | None = None,
    forget_after_s: float | None = None,
    progress: Progress | None = None,
) -> SoakReport:
    """Play the night; returns what was observed (see :class:`SoakReport`). ``idle_s`` and
    ``forget_after_s`` default to the full (or ``quick``) night's."""
    from bot.audio.speech.stt_whisper import FasterWhisperStt
    from bot.bench.doubles.instant_llm import InstantLlm

    say = progress or (lambda message: None)
    started_wall = time.monotonic()
    script = night(hours, quick=quick)
    simulated_h = 20 / 60 if quick else hours
    lines = [e for e in script if isinstance(e, Line)]
    audio = await _player_audio(lines, say)
    say("loading the speech recognizer")
    stt = FasterWhisperStt()
    gc.collect()
    fds_before, tasks_before = _open_fds(), set(asyncio.all_tasks())
    players = {4100 + n: name for n, name in enumerate(PLAYERS)}
    players[4199] = "Dungeon Master"
    forget = forget_after_s or (QUICK_FORGET_AFTER_S if quick else FORGET_AFTER_S)
    local = LocalDiscord(players=players, forget_after_s=forget)
    report = SoakReport(hours=simulated_h, quick=quick, speed=speed, forget_after_s=forget)
    idles = [e.at for e in script if isinstance(e, Action) and e.kind == "idle"]
    report.idle_at = idles[0] if idles else None
    idle = (QUICK_IDLE_S if quick else IDLE_S) if idle_s is None else idle_s
    with tempfile.TemporaryDirectory(prefix="glyphoxa-soak-") as folder:
        await local.start()
        try:
            with local.pointed_at():
                async with InstantLlm() as llm:
                    config = _config(llm.base_url)
                    report = await _play(
                        local, config, folder, stt, audio, script, report, say, idle
                    )
        finally:
            await local.close()
    missed = {(r.line.speaker, r.line.text) for r in report.of("addressed") if not r.answered}
    for key in sorted(missed):  # the connection's fault, or the recognizer's?
        report.clean_hearing[key] = await _hear_clean(stt, audio[key])
    del local
    gc.collect()
    await asyncio.sleep(0)
    report.wall_s = time.monotonic() - started_wall
    report.setup_s = report.night_started - started_wall
    report.fds_leaked = _open_fds() - fds_before
    left = [t for t in asyncio.all_tasks() if t not in tasks_before and not t.done()]
    if left:  # finishing (e.g. discord.py's last voice-state handlers): give them a moment
        await asyncio.wait(left, timeout=5)
    left = [t for t in left if not t.done()]
    report.tasks_left = sorted(f"{t.get_name()}: {t.get_coro()!r}"[:160] for t in left)
    report.tasks_before = len(tasks_before) - 1
    return report


async def _play(
    local: LocalDiscord,
    config: GlyphoxaConfig,
    folder: str,
    stt: Any,
    audio: dict[tuple[str, str], list[bytes]],
    script: list[Line | Action],
    report: SoakReport,
    say: Progress,
    idle_s: float,
) -> SoakReport:
    from bot.table.assembly.table import open_table

    for name in [*players_at_start(), "Dungeon Master"]:
        await local.player_joins(next(u for u, n in local.players.items() if n == name))
    metrics = Metrics()
    client = discord.Client(
        intents=discord.Intents.default(), connector=aiohttp.TCPConnector(ssl=False)
    )
    await client.login("soak-token")
    runner = asyncio.get_running_loop().create_task(client.connect(), name="soak:discord")
    try:
        await asyncio.wait_for(client.wait_until_ready(), timeout=30)
        guild = client.get_guild(local.guild_id)
        assert guild is not None
        voice = guild.get_channel(local.voice_id)
        text = guild.get_channel(local.text_id)
        assert isinstance(voice, discord.VoiceChannel) and isinstance(text, discord.TextChannel)
        async with open_table(
            config,
            campaign=load_campaign(EXAMPLE),
            memory_url=f"sqlite+aiosqlite:///{folder}/memory.db",
            stt=stt,
            metrics=metrics,
            title="soak",
            progress=say,
        ) as session:
            if session.warm_up is not None:
                await asyncio.wait([session.warm_up])
            stall_after_s = QUICK_STALL_AFTER_S if report.quick else config.discord.stall_after_s
            runtime = TableRuntime(
                TableParts(session=session), None, alerts=text, stall_after_s=stall_after_s
            )
            await runtime.start(voice)
            table = Night(local, runtime, session)
            table.audio = audio
            table.idle_s = idle_s
            report.night_started = time.monotonic()
            try:
                await play_script(table, script, report, say)
                await session.wait_idle(timeout_s=ANSWER_TIMEOUT_S)
                table.settle()
            finally:
                report.dm_notices = [m["content"] for m in local.messages]
                report.metrics = metrics
                if runtime.link is not None:
                    report.rejoins = runtime.link.rejoins
                if runtime.voice is not None:
                    report.receive = runtime.voice.receiver.snapshot().as_dict()
                report.overflow = sum(s.lane.dropped_frames for s in session.lanes)
                report.rss_end_mb = rss_mb()
                await runtime.stop()
            report.results = table.results
            report.outages_s = table.outages_s
            report.stalls_s = table.stalls_s
            report.idle = table.idle
    finally:
        await client.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(runner, timeout=10)
    return report


async def run_bench(
    quick: bool, hours: float = 4.0, idle_min: float | None = None
) -> list[BenchResult]:
    """``glyphoxa bench soak [--hours H] [--idle-min M] [--quick]``."""

    def progress(message: str) -> None:
        print(f"  soak: {message}", file=sys.stderr, flush=True)

    idle_s = None if idle_min is None else idle_min * 60
    report = await run_soak(hours, quick=quick, idle_s=idle_s, progress=progress)
    return report.bench_results()
