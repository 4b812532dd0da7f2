"""The local Discord with a logged-in bot and one running table, for the voice tests.

The bot is a real ``discord.Client`` with a real :class:`TableRuntime` and TableSession; the local
Discord (``bot.bench.doubles.local_discord``) plays the main gateway, the REST API and the voice
server with a real DAVE group of players.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.doubles.voice_loopback import LoopbackSpeaker
from bot.frontends.discord_bot import TableParts, TableRuntime
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics

from .conftest import tone

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


@contextlib.asynccontextmanager
async def open_world(
    monkeypatch: pytest.MonkeyPatch, *, forget_after_s: float | None = None
) -> AsyncIterator[World]:
    """The local Discord with the DM and Aria in voice, and a logged-in bot."""
    local = LocalDiscord(
        players={DM: "dm", ARIA: "Aria", BORIN: "Borin"}, forget_after_s=forget_after_s
    )
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


def table_session(world: World, stt: Any) -> Any:
    """A TableSession of the example campaign with espeak voices and no LLM."""
    from bot.audio.speech import EspeakTts
    from npcs.campaign import load_campaign

    return build_session(
        config=GlyphoxaConfig(),
        campaign=load_campaign(EXAMPLE),
        stt=stt,
        tts=EspeakTts(),
        engines=lambda npc: None,
        metrics=world.metrics,
    )


def voice_event(world: World, event: str, cause: str) -> float:
    """``glyphoxa_voice_events_total{event, cause}`` of the world's table."""
    sample = world.metrics.sample("glyphoxa_voice_events_total", {"event": event, "cause": cause})
    return sample or 0.0
