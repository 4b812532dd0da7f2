"""Idle close against a local Discord speaking the real protocols: the production GlyphoxaBot
runs a table, the players leave the voice channel (real VOICE_STATE_UPDATE dispatches), and
after ``session.idle_close_s`` the table ends as ``/session stop`` ends it (memory saved, open
table row removed, the bot out of voice) and tells the DM in the session's text channel; a
player who comes back in time keeps it open. A music bot stays in the channel throughout: bots
are nobody."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import discord.http
import pytest
import yarl
from discord.gateway import DiscordWebSocket

from bot.bench.doubles.local_discord import LocalDiscord
from bot.frontends.discord_bot import GlyphoxaBot, TableParts
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from campaigns.memory.table_registry import TableRegistry

from .discord_api import APP_ID, BOT_ID, FakeDiscordApi
from .guild_payloads import member

pytestmark = pytest.mark.slow

GUILD, TEXT, VOICE, DM_ROLE = 9100, 9101, 9102, 9103
DM_USER, PLAYER, JUKEBOX = 601, 602, 699
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"
NOTICE = "Nobody has been in"


def _start_interaction() -> dict[str, Any]:
    return {
        "id": "990101", "application_id": str(APP_ID), "type": 2, "token": "tok-start",
        "version": 1, "guild_id": str(GUILD), "channel_id": str(TEXT),
        "channel": {"id": str(TEXT), "type": 0, "name": "table", "guild_id": str(GUILD)},
        "member": {**member(DM_USER, "dm", [DM_ROLE]), "permissions": "0"},
        "app_permissions": "0", "attachment_size_limit": 10_485_760, "locale": "en-US",
        "guild_locale": "en-US", "entitlements": [], "authorizing_integration_owners": {},
        "context": 0,
        "data": {"id": "1", "name": "session", "type": 1,
                 "options": [{"name": "start", "type": 1}]},
    }  # fmt: skip


@dataclass
class Night:
    """A running bot with one table, its memory and the local Discord around it."""

    local: LocalDiscord
    api: FakeDiscordApi
    bot: GlyphoxaBot
    memory: MemoryStore
    registry: TableRegistry
    sessions: list[Any] = field(default_factory=list)

    def notices(self) -> list[str]:
        return [str(c[2].get("content")) for c in self.api.calls
                if c[1] == f"channels/{TEXT}/messages" and isinstance(c[2], dict)]  # fmt: skip

    async def everyone_leaves(self) -> float:
        """Both people leave voice (the music bot stays); returns once discord.py saw the last
        one go, with the time just before that one left (no countdown starts earlier)."""
        await self.local.player_leaves(DM_USER)
        last_left = time.monotonic()
        await self.local.player_leaves(PLAYER)
        channel = self.bot.get_guild(GUILD).get_channel(VOICE)  # type: ignore[union-attr]
        await _eventually(lambda: set(channel.voice_states) == {BOT_ID, JUKEBOX})  # type: ignore[union-attr]
        return last_left


async def _night(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, whisper_stt: Any, idle_close_s: float
) -> AsyncIterator[Night]:
    from bot.audio.speech import EspeakTts
    from npcs.campaign import load_campaign

    api = FakeDiscordApi()
    await api.start()
    local = LocalDiscord(
        players={DM_USER: "dm", PLAYER: "Aria", JUKEBOX: "Jukebox"}, guild_id=GUILD,
        text_id=TEXT, voice_id=VOICE, bot_id=BOT_ID, app_id=APP_ID, roles={DM_ROLE: "DM"},
        member_roles={DM_USER: [DM_ROLE]}, bots=[JUKEBOX],
    )  # fmt: skip
    await local.start()
    for user_id in (JUKEBOX, DM_USER, PLAYER):
        await local.player_joins(user_id)
    monkeypatch.setattr(discord.http.Route, "BASE", api.base)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(local.gateway_url))
    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": False},
         "session": {"idle_close_s": idle_close_s}}
    )  # fmt: skip
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    memory = await MemoryStore.open(url)
    registry = await TableRegistry.open(url)
    sessions: list[Any] = []

    async def factory(campaign: str | None) -> TableParts:
        session = build_session(
            config=config, campaign=load_campaign(EXAMPLE), stt=whisper_stt, tts=EspeakTts(),
            engines=lambda npc: None, memory=memory, metrics=Metrics(),
        )  # fmt: skip
        sessions.append(session)
        return TableParts(session=session, memory=memory)

    bot = GlyphoxaBot(
        config, factory, table_registry=registry, connector=aiohttp.TCPConnector(ssl=False)
    )
    runner = asyncio.create_task(bot.start("test-token"))
    night = Night(local, api, bot, memory, registry, sessions)
    try:
        await asyncio.wait_for(bot.wait_until_ready(), timeout=20)
        await local.dispatch("INTERACTION_CREATE", _start_interaction())
        await asyncio.wait_for(local.voice.bot_welcomed.wait(), timeout=20)
        await api.wait_for_call(lambda c: "Session started" in str(c[2]))
        yield night
    finally:
        await bot.close()
        await asyncio.wait_for(runner, timeout=10)
        await registry.close()
        await memory.close()
        await local.close()
        await api.close()


@pytest.fixture
async def night(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, whisper_stt: Any
) -> AsyncIterator[Night]:
    async for made in _night(monkeypatch, tmp_path, whisper_stt, idle_close_s=1.5):
        yield made


async def test_an_empty_channel_ends_the_session_saved_and_tells_the_dm(night: Night) -> None:
    session = night.sessions[0]
    session.controls.say("Bartok", "Last call, friends.")  # a line of the night, stored in memory
    await _eventually(lambda: session.recorder.committed == 1)
    left_at = await night.everyone_leaves()
    notice = await night.api.wait_for_call(
        lambda c: c[1] == f"channels/{TEXT}/messages" and NOTICE in str(c[2])
    )
    waited = time.monotonic() - left_at
    assert 1.5 <= waited < 5.0, waited
    assert notice[2]["content"] == (
        f"Nobody has been in <#{VOICE}> for 1.5 seconds, so I ended the session and left (the "
        "transcript and campaign memory are saved). Run `/session start` when you play again."
    )
    # Saved and gone as /session stop leaves it: memory session closed with its line and a
    # summary, the open-table row removed (no resume after a restart), the bot out of voice.
    assert session._stopped
    (stored,) = await night.memory.list_sessions()
    assert stored["id"] == session.recorder.session_id
    assert stored["ended_at"] is not None and stored["utterances"] == 1
    assert stored["has_summary"]
    assert night.local.voice_states[-1]["channel_id"] is None
    cog = night.bot.get_cog("TableCog")
    assert cog is not None and cog.tables == {}  # type: ignore[attr-defined]
    await _eventually(lambda: not night.registry.holds(GUILD))
    assert await night.registry.get(GUILD) is None
    assert night.notices().count(notice[2]["content"]) == 1


async def test_a_player_back_in_time_keeps_the_table_and_the_countdown_starts_over(
    night: Night,
) -> None:
    cog: Any = night.bot.get_cog("TableCog")
    table = cog.tables[GUILD]
    await night.everyone_leaves()
    await _eventually(lambda: table._idle.counting)  # the cog heard the last one leave
    await asyncio.sleep(0.5)
    await night.local.player_joins(PLAYER)  # back within the 1.5 s
    await _eventually(lambda: not table._idle.counting)
    await asyncio.sleep(2.0)  # well past the first countdown's end
    assert cog.tables.get(GUILD) is table and not night.sessions[0]._stopped
    assert not any(NOTICE in text for text in night.notices())
    # Leaving again starts a full countdown of its own.
    left_at = time.monotonic()  # before the leave: the bot may hear it before this returns
    await night.local.player_leaves(PLAYER)
    await night.api.wait_for_call(lambda c: NOTICE in str(c[2]))
    assert time.monotonic() - left_at >= 1.5
    assert night.sessions[0]._stopped and cog.tables == {}


async def test_idle_close_zero_never_ends_the_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, whisper_stt: Any
) -> None:
    async for night in _night(monkeypatch, tmp_path, whisper_stt, idle_close_s=0):
        cog: Any = night.bot.get_cog("TableCog")
        table = cog.tables[GUILD]
        await night.everyone_leaves()
        await asyncio.sleep(0.5)  # the cog heard them leave
        assert not table._idle.counting
        assert cog.tables.get(GUILD) is table and not night.sessions[0]._stopped


async def _eventually(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    """Wait for state the bot exposes no event for (it changes on discord.py's own tasks)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
