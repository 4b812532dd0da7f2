"""Every way a voice connection ends or moves, against the local Discord (real protocols).

The bot is a real ``discord.Client`` with a real :class:`TableRuntime` and TableSession; the local
Discord (``bot.bench.doubles.local_discord``) plays the main gateway, the REST API and the voice
server with a real DAVE group of players. After each disruption the table either hears the players
again within seconds, or it stops cleanly and tells the DM in the session's text channel.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import discord
import discord.http
import pytest
import yarl
from discord.gateway import DiscordWebSocket

from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.doubles.voice_loopback import LoopbackSpeaker
from bot.config import GlyphoxaConfig
from bot.discord_bot import TableParts, TableRuntime
from bot.metrics import Metrics
from bot.voice.transport_crypto import make_cipher

from .conftest import tone

pytestmark = pytest.mark.slow

DM, ARIA, BORIN = 601, 602, 603
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


class World:
    """The local Discord, a logged-in bot and one running table."""

    def __init__(self, local: LocalDiscord, client: discord.Client, metrics: Metrics) -> None:
        self.local = local
        self.client = client
        self.metrics = metrics
        self.table: TableRuntime | None = None
        self.ended = asyncio.Event()
        encoder = LoopbackSpeaker(1, make_cipher("aead_xchacha20_poly1305_rtpsize", bytes(32)))
        self.opus = [encoder.encode(pcm) for pcm in tone(10)]

    async def start_table(self, session: Any, **options: Any) -> TableRuntime:
        guild = self.client.get_guild(self.local.guild_id)
        assert guild is not None
        text = guild.get_channel(self.local.text_id)
        voice = guild.get_channel(self.local.voice_id)
        assert isinstance(text, discord.TextChannel) and isinstance(voice, discord.VoiceChannel)
        table = TableRuntime(
            TableParts(session=session),
            None,
            alerts=text,
            on_ended=lambda _: self.ended.set(),
            **options,
        )
        await table.start(voice)
        self.table = table
        return table

    async def hears(self, user_id: int, timeout_s: float = 15.0) -> float:
        """Let the player talk until the table decodes them again; seconds that took."""
        assert self.table is not None
        started = time.monotonic()
        while True:
            voice = self.table.voice
            before = voice.receiver.snapshot().decoded if voice is not None else 0
            await self.local.speak(user_id, self.opus)
            voice_after = self.table.voice
            if voice_after is voice and voice is not None:
                if voice.receiver.snapshot().decoded - before >= 8:
                    return time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise AssertionError(f"the table did not hear player {user_id} in {timeout_s} s")

    async def table_ended(self, timeout_s: float = 10.0) -> None:
        """The table ended on its own: the cog was told, the DM read why, all stopped."""
        assert self.table is not None
        async with asyncio.timeout(timeout_s):
            await self.ended.wait()
            await self.local.message_posted.wait()
            while not self.table.session._stopped:  # noqa: ASYNC110
                await asyncio.sleep(0.01)

    def notices(self) -> list[str]:
        return [m["content"] for m in self.local.messages]


@pytest.fixture
async def world(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    local = LocalDiscord(players={DM: "dm", ARIA: "Aria", BORIN: "Borin"})
    await local.start()
    await local.player_joins(DM)
    await local.player_joins(ARIA)
    monkeypatch.setattr(discord.http.Route, "BASE", local.rest_base)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(local.gateway_url))
    client = discord.Client(
        intents=discord.Intents.default(), connector=aiohttp.TCPConnector(ssl=False)
    )
    runner = asyncio.create_task(client.start("test-token"))
    await asyncio.wait_for(client.wait_until_ready(), timeout=20)
    world = World(local, client, Metrics())
    try:
        yield world
    finally:
        if world.table is not None:
            await world.table.stop()
        await client.close()
        await asyncio.wait_for(runner, timeout=10)
        await local.close()


@pytest.fixture
async def session(world: World, whisper_stt: Any) -> Any:
    from bot.session.session import TableSession
    from bot.speech import EspeakTts
    from npcs.campaign import load_campaign

    return TableSession(
        config=GlyphoxaConfig(),
        campaign=load_campaign(EXAMPLE),
        stt=whisper_stt,
        tts=EspeakTts(),
        engines=lambda npc: None,
        metrics=world.metrics,
    )


def _event(world: World, event: str, cause: str) -> float:
    return (
        world.metrics.sample("glyphoxa_voice_events_total", {"event": event, "cause": cause}) or 0
    )


async def test_kicked_the_table_ends_and_the_dm_is_told(world: World, session: Any) -> None:
    table = await world.start_table(session)
    await world.hears(ARIA)
    voice = table.voice
    assert voice is not None
    await world.local.kick_bot()
    await world.table_ended()
    assert voice.ended.result().reason == "kicked"
    assert any("removed from" in text for text in world.notices())
    assert session._stopped
    assert voice.receiver._closed and not voice._listening
    assert voice._ticker is not None and voice._ticker.done()
    assert world.local.voice.stats.identifies == 1  # never rejoined


async def test_channel_deleted_the_table_ends_and_the_dm_is_told(
    world: World, session: Any
) -> None:
    table = await world.start_table(session)
    voice = table.voice
    assert voice is not None
    await world.local.delete_voice_channel()
    await world.table_ended()
    assert voice.ended.result().reason == "channel_deleted"
    assert any("was deleted" in text for text in world.notices())
    assert session._stopped and voice.receiver._closed


async def test_voice_server_move_hears_again_within_seconds(world: World, session: Any) -> None:
    table = await world.start_table(session)
    await world.hears(ARIA)
    first = world.local.voice
    await world.local.move_voice_server()
    assert world.local.voice is not first
    assert await world.hears(ARIA) < 5.0
    assert world.local.voice.stats.identifies == 1
    assert table.voice is not None and table.voice.is_connected()
    assert not world.ended.is_set() and world.notices() == []


@pytest.mark.parametrize("code", [4015, 4021, 4022, 4006])
async def test_a_closed_connection_is_heard_and_connected_again_within_seconds(
    world: World, session: Any, code: int
) -> None:
    """4015 (server crash: discord.py resumes, then waits for a key that never comes), 4021
    (rate limited: discord.py gives up), 4022 (call terminated: discord.py waits for a server
    that never comes), 4006 (session invalid: discord.py reconnects by itself)."""
    table = await world.start_table(session)
    await world.hears(ARIA)
    await world.local.voice.close_bot(code)
    assert await world.hears(ARIA) < 10.0
    async with asyncio.timeout(15):
        while table.voice is None or not table.voice.is_connected():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    # Once in a while discord.py's own reconnect stalls (4006); past 5 s down the table
    # rejoins, which may start just after the check above.
    assert await world.hears(ARIA) < 10.0
    assert not world.ended.is_set() and world.notices() == []


async def test_the_voice_servers_own_close_code_and_reason_are_reported(
    world: World, session: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """discord.py reports its own close code (1000) after the server closed with 4021; the
    table's log and its end of connection carry the server's code and reason."""
    table = await world.start_table(session)
    await world.hears(ARIA)
    first = table.voice
    assert first is not None
    await world.local.voice.close_bot(4021)
    async with asyncio.timeout(15):
        while first.closes.last is None:  # noqa: ASYNC110 - the socket's own reader sets it
            await asyncio.sleep(0.02)
    assert first.closes.last.code == 4021 and first.closes.last.reason == "local voice server"
    assert await world.hears(ARIA) < 10.0  # and the table is back
    said = [r.getMessage() for r in caplog.records if "close code" in r.getMessage()]
    assert any("close code 4021 (local voice server)" in line for line in said), said
    assert not any("close code 1000" in line for line in said), said


async def test_network_loss_rejoins_with_backoff(world: World, session: Any) -> None:
    table = await world.start_table(session)
    await world.hears(ARIA)
    first = table.voice
    await world.local.outage(3.0)
    assert await world.hears(ARIA, timeout_s=30) < 30
    assert not world.ended.is_set() and world.notices() == []
    assert table.link is not None
    if table.voice is not first:
        assert table.link.rejoins >= 1


async def test_rejoin_gives_up_and_tells_the_dm(world: World, session: Any) -> None:
    table = await world.start_table(session, rejoin_attempts=2)
    assert table.link is not None
    table.link._first_delay = 0.2
    world.local.voice.down = True
    world.local.voice.cut()
    await world.table_ended(timeout_s=60)
    assert table.ended is not None and table.ended.end.rejoin
    assert any("could not rejoin after 2 attempts" in text for text in world.notices())
    assert session._stopped
    assert _event(world, "lost", table.ended.end.reason) == 1


async def test_deaf_when_the_group_moves_on_without_us_then_recovered(
    world: World, session: Any
) -> None:
    """A commit the bot never saw: every sender fails, DAVE recovery (op 31 + key package)
    gets no answer, so the deaf detector reconnects; once the server answers, hearing is back."""
    table = await world.start_table(session, deaf_after_s=2.0)
    await world.hears(ARIA)
    server = world.local.voice
    server.welcome_bot = False
    await server.join(BORIN, tell_bot=False)  # a new epoch for everyone but the bot
    async with asyncio.timeout(30):
        while _event(world, "deaf", "dave") < 1:
            await world.local.speak(ARIA, world.opus)
    assert server.stats.invalid_commits >= 1  # failure-driven recovery came first
    server.welcome_bot = True
    assert await world.hears(ARIA, timeout_s=20) < 20
    assert table.link is not None and table.link.rejoins >= 1
    assert not world.ended.is_set()
