"""One process on SQLite (the default): a restarted bot resumes its table; /session stop ends it.

The production ``GlyphoxaBot`` with a ``TableRegistry`` on SQLite, against the local Discord
(one shard of ``ShardedDiscord``: main gateway, TLS voice gateway, UDP, DAVE) and its REST
stand-in. The bot is closed as ``glyphoxa run`` closes it on SIGTERM (the table stops, its row
stays), and a new bot over the same database rejoins the voice channel with the DM's mute kept,
telling the DM.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import discord.http
import pytest
import yarl
from discord.gateway import DiscordWebSocket

from bot.audio.speech import EspeakTts
from bot.frontends.discord_bot import GlyphoxaBot, TableParts
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from campaigns.memory.table_registry import TableRegistry
from npcs.campaign import load_campaign

from ..discord.discord_api import APP_ID, BOT_ID, FakeDiscordApi, user
from ..discord.guild_payloads import guild, ids, interaction, sub
from ..discord.sharded_discord import ShardedDiscord

GUILD = (5 << 22) | 3
PLAYER = (602, "Aria")
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


class NoStt:
    async def transcribe(self, audio: object, **_: object) -> str:
        return ""


@pytest.fixture
async def world(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[tuple[ShardedDiscord, FakeDiscordApi]]:
    api = FakeDiscordApi()
    await api.start()
    local = ShardedDiscord(
        [guild(GUILD, PLAYER)], shard_count=1, bot_user=user(BOT_ID, "Glyphoxa", bot=True),
        app_id=APP_ID, tls_dir=tmp_path / "tls",
    )  # fmt: skip
    await local.start({GUILD: PLAYER[0]})
    # Only Discord's addresses change; every byte is produced and parsed by discord.py.
    monkeypatch.setattr(discord.http.Route, "BASE", api.base)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(local.gateway_url))
    yield local, api
    await local.close()
    await api.close()


async def test_a_restarted_bot_resumes_its_table_from_sqlite(
    world: tuple[ShardedDiscord, FakeDiscordApi], tmp_path: Path
) -> None:
    local, api = world
    voice_states = local.voices[GUILD].voice_states
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": False},
         "campaign": {"hot_reload": False}, "memory": {"url": url}}
    )  # fmt: skip
    memory = await MemoryStore.open(url)
    registry = await TableRegistry.open(url)
    memory_sessions: list[str | None] = []
    running: list[tuple[GlyphoxaBot, asyncio.Task[None]]] = []

    async def factory(campaign: str | None, *, memory_session_id: str | None = None) -> TableParts:
        memory_sessions.append(memory_session_id)
        session = build_session(
            config=config, campaign=load_campaign(EXAMPLE), stt=NoStt(), tts=EspeakTts(),  # type: ignore[arg-type]
            engines=lambda npc: None, memory=memory, metrics=Metrics(),
            memory_session_id=memory_session_id,
        )  # fmt: skip
        return TableParts(session=session, memory=memory)

    async def run_bot() -> tuple[GlyphoxaBot, asyncio.Task[None]]:
        bot = GlyphoxaBot(
            config, factory, table_registry=registry, connector=aiohttp.TCPConnector(ssl=False)
        )
        runner = asyncio.create_task(bot.start("test-token"))
        running.append((bot, runner))
        await asyncio.wait_for(bot.wait_until_ready(), timeout=20)
        return bot, runner

    async def command(name: str, options: list[dict[str, Any]]) -> str:
        payload = interaction(GUILD, name, options)
        assert await local.dispatch_guild(GUILD, "INTERACTION_CREATE", payload) == 1
        call = await api.wait_for_call(
            lambda c: (c[1] == f"webhooks/{APP_ID}/{payload['token']}"
                       or c[1].startswith(f"interactions/{payload['id']}/"))
            and bool(_content(c[2]))
        )  # fmt: skip
        return _content(call[2])

    try:
        bot, runner = await run_bot()
        assert "Session started" in await command("session", sub("start"))
        assert "Muted" in await command("npc", sub("mute", name="Captain Vessa"))
        assert "grumpy" in await command("npc", sub("mood", name="Bartok", mood="grumpy"))
        await _until_saved(
            registry,
            lambda state: (
                state.get("seats", {}).get("Captain Vessa", {}).get("muted")
                and state["seats"].get("Bartok", {}).get("mood") == "grumpy"
            ),
        )
        await bot.close()  # as on SIGTERM: the table stops, its row stays
        await asyncio.wait_for(runner, timeout=10)
        assert voice_states[-1]["channel_id"] is None  # it left voice
        kept = await registry.get(GUILD)
        assert kept is not None and kept.memory_session_id is not None

        joins = len(voice_states)
        bot, runner = await run_bot()
        await api.wait_for_call(
            lambda c: (
                c[1] == f"channels/{ids(GUILD)['text']}/messages"
                and "the session continues" in str(c[2])
            )
        )
        rejoined = voice_states[joins:]
        assert [int(s["channel_id"]) for s in rejoined] == [ids(GUILD)["voice"]]
        # The transcript continues in the same memory session.
        assert memory_sessions == [None, kept.memory_session_id]
        status = await command("session", sub("status"))
        assert "Captain Vessa: budget standard, muted" in status
        (bartok,) = [line for line in status.splitlines() if "- Bartok:" in line]
        assert "mood: grumpy" in bartok  # the DM's mood for Bartok came back with the table

        assert "Session stopped" in await command("session", sub("stop"))
        assert await registry.get(GUILD) is None  # closed by the DM: nobody resumes it
        await bot.close()
        await asyncio.wait_for(runner, timeout=10)
        assert await memory.count("sessions") == 1
    finally:
        for bot, runner in running:
            if not bot.is_closed():
                await bot.close()
            await asyncio.gather(runner, return_exceptions=True)
        await registry.close()
        await memory.close()


def _content(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    return str(body.get("content") or (body.get("data") or {}).get("content") or "")


async def _until_saved(registry: TableRegistry, check: Any) -> None:
    async with asyncio.timeout(10):
        while True:
            row = await registry.get(GUILD)
            if row is not None and check(row.state):
                return
            await asyncio.sleep(0.05)  # a database has no event
