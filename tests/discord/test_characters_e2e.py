"""Characters against a local Discord speaking the real protocols: a ``campaign.yaml`` entry
names the player's voice lane by their character from their first frame; ``/iam`` renames
the open lane and is kept in the campaign memory."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.bench.doubles.local_discord import LocalDiscord
from bot.frontends.discord_bot import GlyphoxaBot, TableParts
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore

from .conftest import OpenWorld
from .discord_api import APP_ID, FakeDiscordApi
from .guild_payloads import member
from .test_session_e2e import _eventually

GUILD, TEXT, VOICE, DM_ROLE = 9200, 9201, 9202, 9203
DM_USER, PLAYER = 223456789012345678, 123456789012345678  # real-sized Discord user ids
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


def _interaction(who: int, name: str, options: list[dict[str, Any]], n: int) -> dict[str, Any]:
    roles = [DM_ROLE] if who == DM_USER else []
    return {
        "id": str(991000 + n), "application_id": str(APP_ID), "type": 2, "token": f"tok-{n}",
        "version": 1, "guild_id": str(GUILD), "channel_id": str(TEXT),
        "channel": {"id": str(TEXT), "type": 0, "name": "table", "guild_id": str(GUILD)},
        "member": {**member(who, "dm" if who == DM_USER else "Aria", roles), "permissions": "0"},
        "app_permissions": "0", "attachment_size_limit": 10_485_760, "locale": "en-US",
        "guild_locale": "en-US", "entitlements": [], "authorizing_integration_owners": {},
        "context": 0, "data": {"id": "1", "name": name, "type": 1, "options": options},
    }  # fmt: skip


@pytest.fixture
async def world(local_world: OpenWorld) -> tuple[LocalDiscord, FakeDiscordApi]:
    players = {DM_USER: "dm", PLAYER: "Aria"}
    return await local_world(guild=GUILD, text=TEXT, voice=VOICE, dm_role=DM_ROLE, players=players)


async def test_campaign_yaml_and_iam_name_the_players_lane(
    world: tuple[LocalDiscord, FakeDiscordApi], whisper_stt: Any, tmp_path: Path
) -> None:
    local, api = world
    from bot.audio.speech import EspeakTts
    from bot.table.session.session import TableSession
    from npcs.campaign import load_campaign

    folder = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, folder)
    with (folder / "campaign.yaml").open("a") as meta:
        meta.write(f"characters:\n  {PLAYER}: Arin Duskwalker\n")
    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": False}}
    )
    memory = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    sessions: list[TableSession] = []

    async def factory(campaign: str | None) -> TableParts:
        session = build_session(
            config=config, campaign=load_campaign(folder), stt=whisper_stt, tts=EspeakTts(),
            engines=lambda npc: None, metrics=Metrics(), memory=memory,
        )  # fmt: skip
        sessions.append(session)
        return TableParts(session=session, memory=memory)

    bot = GlyphoxaBot(config, factory, connector=aiohttp.TCPConnector(ssl=False))
    runner = asyncio.create_task(bot.start("test-token"))
    try:
        await asyncio.wait_for(bot.wait_until_ready(), timeout=20)
        start = [{"name": "start", "type": 1, "options": []}]
        await local.dispatch("INTERACTION_CREATE", _interaction(DM_USER, "session", start, 1))
        await asyncio.wait_for(local.voice.bot_welcomed.wait(), timeout=20)
        await api.wait_for_call(lambda c: "Session started" in str(c[2]))
        vc = bot.get_guild(GUILD).voice_client  # type: ignore[union-attr]
        voice = local.voice
        player = voice.players[PLAYER]
        await voice.set_speaking(PLAYER, True)
        await _eventually(lambda: vc.receiver.user_for(player.ssrc) == PLAYER)  # type: ignore[union-attr]
        assert player.speaker is not None
        quiet = player.speaker.encode(bytes(3840))
        for _ in range(15):
            voice.send(PLAYER, quiet)
        session = sessions[0]
        # campaign.yaml names the lane from its first frame; Discord's name stays beside it
        await _eventually(lambda: "Arin Duskwalker" in session.status().speakers)
        assert session.status().speakers["Arin Duskwalker"].display_name == "Aria"

        iam = [{"name": "character", "type": 3, "value": "Arin"}]
        await local.dispatch("INTERACTION_CREATE", _interaction(PLAYER, "iam", iam, 2))
        reply = await api.wait_for_call(lambda c: "plays **Arin**" in str(c[2]))
        assert reply[2]["data"]["content"] == "Aria plays **Arin**."
        assert list(session.status().speakers) == ["Arin"]  # the open lane, renamed
        stored = await memory.character_bindings(session.campaign.name)
        assert [(b.user_id, b.character) for b in stored] == [(str(PLAYER), "Arin")]
    finally:
        await bot.close()
        await asyncio.wait_for(runner, timeout=10)
        await memory.close()
