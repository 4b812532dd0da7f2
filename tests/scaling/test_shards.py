"""Many tables: bot processes holding different shards against one local Discord and PostgreSQL.

Each bot is the production ``glyphoxa run --shard-count 2 --shard-ids N`` in its own process
(``tests/discord/shard_bot.py`` only points discord.py at the local Discord). Speech, the LLM
and voices are remote OpenAI-compatible servers in this process (``InstantAudio``,
``InstantLlm``): what is tested is the receive path, VAD, routing, playback and the tables'
life across processes. Players speak DAVE-encrypted Opus over UDP, and the NPCs' answers must
arrive encrypted for them.

1. Guilds on shard 0 and shard 1 run their tables in the two processes.
2. The shard-0 process is killed (SIGKILL); a new one with the same shard resumes the table from
   PostgreSQL: it rejoins the voice channel, tells the DM, keeps the DM's tier override and
   mute and the scene (the next answer's prompt holds what was said before the kill).
3. Two processes start on the same shard with an open table: only one runs it, the other stays
   silent on its guild's commands; when the runner dies the other takes the table over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
import soxr
from prometheus_client.parser import text_string_to_metric_families

from bot.audio.speech import EspeakTts
from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.receiver import VoiceReceiver
from bot.bench.doubles.instant_audio import InstantAudio
from bot.bench.doubles.instant_llm import ANSWERS, InstantLlm
from campaigns.memory.table_registry import TableRegistry
from campaigns.providers.voices import VoiceSettings

from ..discord.discord_api import APP_ID, BOT_ID, FakeDiscordApi, user
from ..discord.guild_payloads import guild, ids, interaction, sub
from ..discord.sharded_discord import ShardedDiscord

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
G0, G1 = (2 << 22) | 1, (3 << 22) | 1  # shard 0 and shard 1 of 2
PLAYERS = {G0: (602, "Aria"), G1: (603, "Brom")}
LINE = "Bartok, what's on tap tonight?"
BARTOK = ANSWERS["Bartok"]


@dataclass
class World:
    discord: ShardedDiscord
    api: FakeDiscordApi
    llm: InstantLlm
    audio: InstantAudio
    config: Path
    env: dict[str, str]
    work: Path
    postgres: str
    speech: list[bytes]
    """The player's line as 20 ms frames of 48 kHz stereo s16le (espeak-ng)."""


@dataclass
class Bot:
    shard: int
    process: asyncio.subprocess.Process
    log: Path
    metrics_url: str

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    async def claims(self, outcome: str) -> float:
        """``glyphoxa_table_claims_total{outcome}`` scraped from the bot's /metrics."""
        try:
            async with aiohttp.ClientSession() as http, http.get(self.metrics_url) as response:
                text = await response.text()
        except aiohttp.ClientError:
            return 0.0  # not serving yet
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "glyphoxa_table_claims_total" and sample.labels == {
                    "outcome": outcome
                }:
                    return float(sample.value)
        return 0.0


@pytest.fixture
async def world(tmp_path: Path, postgres_url: str) -> AsyncIterator[World]:
    speech = await _speech_frames(LINE)
    discord_side = ShardedDiscord(
        [guild(G0, PLAYERS[G0]), guild(G1, PLAYERS[G1])],
        shard_count=2,
        bot_user=user(BOT_ID, "Glyphoxa", bot=True),
        app_id=APP_ID,
        tls_dir=tmp_path / "tls",
    )
    await discord_side.start({g: PLAYERS[g][0] for g in (G0, G1)})
    api = FakeDiscordApi()
    await api.start()
    async with InstantLlm() as llm, InstantAudio(LINE) as audio:
        config = tmp_path / "glyphoxa.yaml"  # each bot adds its own metrics port
        config.write_text(
            f"""
discord: {{token: "${{DISCORD_TOKEN}}", guild_ids: [{G0}, {G1}], dm_role: DM,
           transcription_notice: false}}
providers:
  llm: {{name: openai, base_url: "{llm.base_url}", model: instant, api_key: instant}}
  stt: {{name: openai, base_url: "{audio.base_url}", model: whisper-1}}
  tts: {{name: openai, base_url: "{audio.base_url}", model: tts-1,
         options: {{all_voices: true}}}}
campaign: {{path: "{ROOT / "campaigns" / "example"}", hot_reload: false}}
memory: {{url: "{postgres_url}"}}
"""
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DISCORD_TOKEN": "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhXyZa." + "s" * 38,  # well-shaped
            "GLYPHOXA_TEST_DISCORD_API": api.base,
            "GLYPHOXA_TEST_DISCORD_GATEWAY": discord_side.gateway_url,
            "SSL_CERT_FILE": str(discord_side.certificates()),
        }
        work = tmp_path / "work"
        work.mkdir()
        yield World(discord_side, api, llm, audio, config, env, work, postgres_url, speech)
    await api.close()
    await discord_side.close()


@contextlib.asynccontextmanager
async def _bots(world: World) -> AsyncIterator[Callable[[int], Any]]:
    """``start(shard)`` launches a bot process; all are killed at the end."""
    started: list[Bot] = []

    async def start(shard: int) -> Bot:
        name = f"bot-{len(started)}-shard{shard}"
        log, config = world.work / f"{name}.log", world.work / f"{name}.yaml"
        port = _free_port()
        config.write_text(world.config.read_text() + f"metrics: {{enabled: true, port: {port}}}\n")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.discord.shard_bot", "--config", str(config),
            "run", "--shard-count", "2", "--shard-ids", str(shard),
            cwd=world.work, env=world.env, stdout=log.open("wb"), stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        bot = Bot(shard, process, log, f"http://127.0.0.1:{port}/metrics")
        started.append(bot)
        return bot

    try:
        yield start
    finally:
        for bot in started:
            if bot.process.returncode is None:
                bot.process.kill()
                await bot.process.wait()


async def test_tables_across_shard_processes_resume_and_never_run_twice(world: World) -> None:
    local, api = world.discord, world.api
    async with _bots(world) as start:
        # 1. One process per shard; each runs the table of the guild on its shard.
        first = await start(0)
        second = await start(1)
        await _until(world, lambda: local.live(0) and local.live(1), first, second)
        await _session_start(world, G0, first)
        await _session_start(world, G1, second)
        assert local.joins(G0) == local.live(0) and local.joins(G1) == local.live(1)
        await _speak_and_hear_the_npc(world, G0, first)
        await _speak_and_hear_the_npc(world, G1, second)

        # The DM steers the shard-0 table; its state reaches PostgreSQL.
        deep = [{"name": "level", "type": 3, "value": "deep"},
                {"name": "npc", "type": 3, "value": "Bartok"}]  # fmt: skip
        await _command(world, G0, "tier", deep)
        await _command(world, G0, "npc", sub("mute", name="Vessa"))
        await _until_stored(
            world,
            G0,
            lambda s: s.get("seats", {}).get("Captain Vessa", {}).get("muted") and s["overrides"],
        )

        # 2. SIGKILL the shard-0 process; a new one on shard 0 resumes the table.
        os.kill(first.process.pid, signal.SIGKILL)
        await first.process.wait()
        await _until(world, lambda: not local.live(0), second)
        readied = local.voices[G0].ready_count
        replacement = await start(0)
        await _until(world, lambda: local.voices[G0].ready_count > readied, replacement)
        await _resume_notice(world, G0, 1)
        status = await _command(world, G0, "session", sub("status"))
        assert "Bartok: budget fast, tier DM override deep for Bartok" in status
        assert "Vessa: budget" in status and "muted" in status.split("Vessa:")[1].splitlines()[0]
        before = len(world.llm.requests)
        await _speak_and_hear_the_npc(world, G0, replacement)
        prompt = _prompt_text(world.llm.requests[before:], "Aria")
        assert prompt.count(BARTOK.split(".")[0]) >= 1, "the scene before the kill was lost"

        # 3. Two processes on shard 1 with its table open: only one runs it.
        os.kill(second.process.pid, signal.SIGKILL)
        await second.process.wait()
        await _until(world, lambda: not local.live(1))
        readied = local.voices[G1].ready_count
        one, other = await start(1), await start(1)
        await _until(world, lambda: len(local.live(1)) == 2, one, other)
        # Each decides at startup: one resumes the table, the other finds it taken.
        await _until_metrics(one, other, resumed=1, elsewhere=1)
        winner = one if await one.claims("resumed") else other
        loser = other if winner is one else one
        await _until(world, lambda: local.voices[G1].ready_count > readied, one, other)
        await _resume_notice(world, G1, 1)
        runners = local.joins(G1)
        assert len(runners) == 1
        assert runners[0].peer_port in _tcp_ports(winner.process.pid)
        # Both get every interaction of the guild: the runner answers, the other stays silent
        # (it counts the interaction as "elsewhere" instead of answering).
        silent = await loser.claims("elsewhere")
        payload = interaction(G1, "session", sub("status"))
        await local.dispatch_guild(G1, "INTERACTION_CREATE", payload)
        await _until_metrics(loser, elsewhere=silent + 1)
        answer = await api.wait_for_call(
            lambda c: c[1].startswith(f"interactions/{payload['id']}/")
        )
        assert "Campaign" in answer[2]["data"]["content"]
        answers = [c for c in api.calls if payload["id"] in c[1] or payload["token"] in c[1]]
        assert len(answers) == 1, f"expected one answer, got {answers}"
        assert local.joins(G1) == runners  # still only one

        # The runner dies: the other process takes the table over on its next sweeps.
        readied = local.voices[G1].ready_count
        os.kill(winner.process.pid, signal.SIGKILL)
        await winner.process.wait()
        await _until(world, lambda: local.voices[G1].ready_count > readied, loser, timeout_s=60)
        assert len(local.joins(G1)) == 1 and local.joins(G1) != runners
        await _resume_notice(world, G1, 2)


async def _until_metrics(*bots: Bot, timeout_s: float = 60.0, **wanted: float) -> None:
    """Until the bots' claim counters add up to ``wanted`` (outcome -> at least this many)."""
    async with asyncio.timeout(timeout_s):
        while True:
            totals = {o: sum([await b.claims(o) for b in bots]) for o in wanted}
            if all(totals[o] >= n for o, n in wanted.items()):
                return
            for bot in bots:
                if bot.process.returncode is not None:
                    pytest.fail(f"bot exited:\n{bot.tail()}")
            await asyncio.sleep(0.1)  # a scrape has no event


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _resume_notice(world: World, guild: int, count: int) -> None:
    """Wait for the ``count``-th "the session continues" message in the guild's text channel
    (sent once a resumed table is running)."""
    channel = f"channels/{ids(guild)['text']}/messages"

    def notices() -> list[str]:
        return [
            str(body.get("content"))
            for _method, path, body in world.api.calls
            if path == channel and "the session continues" in str(body)
        ]

    await world.api.wait_for_call(lambda _call: len(notices()) >= count, timeout_s=30)
    assert all(n.startswith("Glyphoxa restarted") for n in notices())


def _tcp_ports(pid: int) -> set[int]:
    """Local TCP ports of a process's sockets (Linux /proc): which bot holds a connection."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                columns = line.split()
                if columns[9] in inodes:
                    ports.add(int(columns[1].rsplit(":", 1)[1], 16))
    return ports


def _prompt_text(requests: list[dict[str, Any]], speaker: str) -> str:
    """Everything sent to the LLM for turns of ``speaker``'s table (all messages' text)."""
    texts = []
    for body in requests:
        messages = " ".join(str(m.get("content") or "") for m in body["messages"])
        if speaker in messages:
            texts.append(messages)
    return "\n".join(texts)


async def _until(
    world: World, condition: Callable[[], Any], *bots: Bot, timeout_s: float = 60.0
) -> None:
    """Wait for the local Discord's state; a bot that exits meanwhile fails the test (its log)."""
    waiting = asyncio.create_task(world.discord.wait_until(lambda: bool(condition()), timeout_s))
    exits = [asyncio.create_task(bot.process.wait()) for bot in bots]
    try:
        done, _ = await asyncio.wait([waiting, *exits], return_when=asyncio.FIRST_COMPLETED)
        for bot, task in zip(bots, exits, strict=True):
            if task in done:
                pytest.fail(f"bot on shard {bot.shard} exited ({task.result()}):\n{bot.tail()}")
        if waiting.exception() is not None:
            logs = "\n---\n".join(bot.tail() for bot in bots)
            pytest.fail(f"timed out waiting for the local Discord; bot logs:\n{logs}")
    finally:
        for task in [waiting, *exits]:
            task.cancel()
        await asyncio.gather(waiting, *exits, return_exceptions=True)


async def _session_start(world: World, guild: int, bot: Bot) -> None:
    voice = world.discord.voices[guild]
    readied = voice.ready_count
    await _command(world, guild, "session", sub("start"), expect="Session started", bot=bot)
    await _until(world, lambda: voice.ready_count > readied, bot)


async def _command(
    world: World,
    guild: int,
    name: str,
    options: list[dict[str, Any]],
    *,
    expect: str | None = None,
    bot: Bot | None = None,
) -> str:
    """Send a slash command as the DM; returns the first answer's text."""
    payload = interaction(guild, name, options)
    assert await world.discord.dispatch_guild(guild, "INTERACTION_CREATE", payload) >= 1
    token = payload["token"]

    def answered(call: tuple[str, str, Any]) -> bool:
        _method, path, body = call
        if not isinstance(body, dict | None):
            return False
        content = str(
            (body or {}).get("content") or ((body or {}).get("data") or {}).get("content") or ""
        )
        mine = path == f"webhooks/{APP_ID}/{token}" or path.startswith(
            f"interactions/{payload['id']}/"
        )
        return mine and bool(content) and (expect is None or expect in content)

    try:
        call = await world.api.wait_for_call(answered, timeout_s=45)
    except TimeoutError:
        logs = bot.tail() if bot else ""
        pytest.fail(f"/{name} in guild {guild} got no answer\n{logs}")
    body = call[2] or {}
    return str(body.get("content") or (body.get("data") or {}).get("content"))


async def _until_stored(world: World, guild: int, check: Callable[[dict[str, Any]], bool]) -> None:
    registry = await TableRegistry.open(world.postgres, owner="test")
    row = None
    try:
        async with asyncio.timeout(10):
            while True:
                row = await registry.get(guild)
                if row is not None and check(row.state):
                    return
                await asyncio.sleep(0.05)  # a database has no event
    except TimeoutError:
        pytest.fail(f"guild {guild}'s stored table never matched: {row}")
    finally:
        await registry.close()


async def _speak_and_hear_the_npc(world: World, guild: int, bot: Bot) -> None:
    """The guild's player says the line over UDP; the NPC's answer must come back to them."""
    server, remote = world.discord.voices[guild].server, world.discord.voices[guild].remote
    assert remote.speaker is not None
    player = PLAYERS[guild][1]
    asked = len(world.audio.requests)
    silence = [bytes(3840)] * 40
    for frame in [*silence[:10], *world.speech, *silence]:
        assert server.send(remote.user_id, remote.speaker.encode(frame))
        await asyncio.sleep(0.02)  # a client sends one packet per 20 ms
    from_bot = server.stats.recent_from_bot
    from_bot.clear()

    def answered() -> bool:
        spoke = [r for r in world.llm.requests if player in str(r["messages"])]
        speech = [f for route, f in world.audio.requests[asked:] if route == "speech"]
        return bool(spoke) and bool(speech) and len(from_bot) > 100

    async with asyncio.timeout(45):
        while not answered():
            if bot.process.returncode is not None:
                pytest.fail(f"bot exited:\n{bot.tail()}")
            await asyncio.sleep(0.05)  # three servers, no common event
    ears = VoiceReceiver(
        asyncio.get_running_loop(), lambda f: None, dave=DaveReceiver(lambda: (remote.session, 1))
    )
    ears.set_transport(server.mode, server.secret_key)
    ears.map_ssrc(server.bot_ssrc, BOT_ID)
    frames = []
    for datagram in list(from_bot):
        frames += ears.process(datagram)
    counters = ears.snapshot()
    assert counters.dropped["decrypt_failed"] == 0 and counters.dropped["dave_failed"] == 0
    loudest = max(int(np.abs(np.frombuffer(f.pcm, "<i2")).max()) for f in frames)
    assert loudest > 1000, "the NPC's voice did not reach the player"


async def _speech_frames(text: str) -> list[bytes]:
    pieces = []
    async for chunk in EspeakTts().synthesize(text, VoiceSettings(provider="espeak")):
        mono = np.frombuffer(chunk.pcm, "<i2").astype(np.float32)
        pieces.append(soxr.resample(mono, chunk.sample_rate, 48_000))
    mono = np.clip(np.concatenate(pieces), -32768, 32767).astype("<i2")
    mono = np.concatenate([mono, np.zeros((-len(mono)) % 960, dtype="<i2")])
    stereo = np.repeat(mono[:, None], 2, axis=1).tobytes()
    return [stereo[i : i + 3840] for i in range(0, len(stereo), 3840)]
