"""`/session start` to `/session stop` against a local Discord speaking the real protocols.

The bot is the production GlyphoxaBot. The interaction arrives as an INTERACTION_CREATE
dispatch on the main gateway; joining voice runs discord.py's whole flow (op 4, voice server
update, TLS voice websocket, UDP IP discovery, DAVE handshake); a remote member then speaks
DAVE-encrypted audio over UDP, which must reach the real TableSession as that player's lane,
while the bot's playback (the session's mixer) must arrive encrypted for the remote member.
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

from bot.config import GlyphoxaConfig
from bot.discord_bot import GlyphoxaBot, TableParts
from bot.metrics import Metrics
from bot.voice.dave import DaveReceiver
from bot.voice.loopback import LoopbackSpeaker
from bot.voice.receiver import VoiceReceiver
from bot.voice.transport_crypto import make_cipher

from .discord_api import APP_ID, BOT_ID, FakeDiscordApi, user
from .local_discord import LocalDiscord

GUILD, TEXT, VOICE, DM_ROLE = 9100, 9101, 9102, 9103
DM_USER, PLAYER = 601, 602
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


def _member(user_id: int, name: str, roles: list[int]) -> dict[str, Any]:
    return {
        "user": user(user_id, name),
        "roles": [str(r) for r in roles],
        "joined_at": "2026-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def _guild() -> dict[str, Any]:
    roles = [
        {"id": str(GUILD), "name": "@everyone", "permissions": "0", "position": 0},
        {"id": str(DM_ROLE), "name": "DM", "permissions": "0", "position": 1},
    ]
    for r in roles:
        r.update(color=0, hoist=False, managed=False, mentionable=False, flags=0)
    voice = {"id": str(VOICE), "type": 2, "name": "Tavern", "position": 1}
    voice.update(bitrate=64000, user_limit=0)
    in_voice = [
        {"user_id": str(u), "channel_id": str(VOICE), "session_id": f"s{u}", "deaf": False,
         "mute": False, "self_deaf": False, "self_mute": False, "self_video": False,
         "suppress": False, "request_to_speak_timestamp": None}
        for u in (DM_USER, PLAYER)
    ]  # fmt: skip
    return {
        "id": str(GUILD),
        "name": "Table",
        "owner_id": "1",
        "unavailable": False,
        "large": False,
        "member_count": 3,
        "roles": roles,
        "emojis": [],
        "features": [],
        "channels": [{"id": str(TEXT), "type": 0, "name": "table", "position": 0}, voice],
        "members": [_member(DM_USER, "dm", [DM_ROLE]), _member(PLAYER, "Aria", [])],
        "voice_states": in_voice,
        "threads": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
    }


def _interaction(name: str, sub: str) -> dict[str, Any]:
    return {
        "id": "990001" if sub == "start" else "990002",
        "application_id": str(APP_ID),
        "type": 2,
        "token": f"tok-{sub}",
        "version": 1,
        "guild_id": str(GUILD),
        "channel_id": str(TEXT),
        "channel": {"id": str(TEXT), "type": 0, "name": "table", "guild_id": str(GUILD)},
        "member": {**_member(DM_USER, "dm", [DM_ROLE]), "permissions": "0"},
        "app_permissions": "0",
        "attachment_size_limit": 10_485_760,
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 0,
        "data": {"id": "1", "name": name, "type": 1, "options": [{"name": sub, "type": 1}]},
    }


@pytest.fixture
async def world(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[tuple[LocalDiscord, FakeDiscordApi]]:
    api = FakeDiscordApi()
    await api.start()
    discord_side = LocalDiscord(
        guild=_guild(), bot_user=user(BOT_ID, "Glyphoxa", bot=True), app_id=APP_ID,
        tls_dir=str(tmp_path),
    )  # fmt: skip
    await discord_side.start(remote_user=PLAYER)
    # Only Discord's addresses change; every byte is produced and parsed by discord.py.
    monkeypatch.setattr(discord.http.Route, "BASE", api.base)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(discord_side.gateway_url))
    yield discord_side, api
    await discord_side.close()
    await api.close()


async def test_session_start_hears_players_and_plays_the_mixer(
    world: tuple[LocalDiscord, FakeDiscordApi], whisper_stt: Any
) -> None:
    local, api = world
    from bot.session.session import TableSession
    from bot.speech import EspeakTts
    from npcs.campaign import load_campaign

    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": True}}
    )
    sessions: list[TableSession] = []
    metrics = Metrics()  # the table's own registry, as METRICS is for `glyphoxa run`

    async def factory(campaign: str | None) -> TableParts:
        session = TableSession(
            config=config,
            campaign=load_campaign(EXAMPLE),
            stt=whisper_stt,
            tts=EspeakTts(),
            engines=lambda npc: None,
            metrics=metrics,
        )
        sessions.append(session)
        return TableParts(session=session)

    # The TLS voice endpoint uses a throwaway self-signed certificate.
    bot = GlyphoxaBot(config, factory, connector=aiohttp.TCPConnector(ssl=False))
    runner = asyncio.create_task(bot.start("test-token"))
    try:
        await asyncio.wait_for(bot.wait_until_ready(), timeout=20)
        await local.dispatch("INTERACTION_CREATE", _interaction("session", "start"))
        await asyncio.wait_for(local.dave_ready.wait(), timeout=20)
        await api.wait_for_call(
            lambda c: c[1] == f"webhooks/{APP_ID}/tok-start" and "Session started" in str(c[2])
        )
        notice = await api.wait_for_call(lambda c: c[1] == f"channels/{TEXT}/messages")
        assert "transcribed" in notice[2]["content"]
        vc = bot.get_guild(GUILD).voice_client  # type: ignore[union-attr]
        assert vc is not None and vc.is_connected()

        # What the DM must know reaches the channel the session started in (no transcript
        # channel is configured): here, the supervised LLM server reporting a crash.
        crash = "local LLM server crashed with SIGSEGV (...): rebuild with ./scripts/setup"
        sessions[0].trouble.part_changed("llm_server", crash, crash)
        alert = await api.wait_for_call(
            lambda c: c[1] == f"channels/{TEXT}/messages" and crash in str(c[2])
        )
        assert alert[2]["content"] == f"\u26a0\ufe0f {crash}"

        # The remote player speaks (DAVE + transport encrypted) over UDP, once the bot has
        # seen their SPEAKING (op 5): before that their SSRC is unknown and dropped.
        assert local.remote is not None
        await asyncio.wait_for(local.speaking_sent.wait(), timeout=10)
        await _eventually(lambda: vc.receiver.user_for(local.remote_ssrc) == PLAYER)
        cipher = make_cipher(local.mode, local.secret_key)
        speaker = LoopbackSpeaker(local.remote_ssrc, cipher, local.remote)
        for _ in range(15):
            local.udp.send(speaker.packet(b"\xf8\xff\xfe"))  # silence: no STT work needed
            local.udp.send(speaker.packet(speaker.encode(bytes(3840))))
        session = sessions[0]
        await _eventually(lambda: "Aria" in session.status()["speakers"])
        # DM voice commands are read only from the lane of a member with the DM role.
        assert session.dm_resolver(str(DM_USER)) and not session.dm_resolver(str(PLAYER))
        assert not session.is_dm(next(iter(session.lanes)))
        assert vc.receiver.snapshot().dropped["dave_failed"] == 0

        # The receive path's counters reach the metrics registry (read at scrape time).
        def packets(outcome: str) -> float:
            return metrics.sample("glyphoxa_voice_packets_total", {"outcome": outcome}) or 0.0

        await _eventually(lambda: packets("received") >= 30)
        assert packets("received") == vc.receiver.snapshot().received
        assert packets("decrypt_failed") == 0.0
        assert "glyphoxa_voice_packets_total" in metrics.exposition()

        # The bot plays the session's mixer; the remote member can decrypt and decode it.
        # (Packets sent before the bot's DAVE session was ready are plain, as discord.py sends
        # them during the transition; look only at what was sent after.)
        local.udp.from_bot.clear()
        await _eventually(lambda: len(local.udp.from_bot) >= 10)
        ears = VoiceReceiver(
            asyncio.get_running_loop(), lambda f: None, dave=DaveReceiver(lambda: (local.remote, 1))
        )
        ears.set_transport(local.mode, local.secret_key)
        ears.map_ssrc(local.bot_ssrc, BOT_ID)
        for datagram in list(local.udp.from_bot):
            ears.process(datagram)
        counters = ears.snapshot()
        assert counters.accepted > 0 and counters.dropped["decrypt_failed"] == 0
        assert counters.dropped["dave_failed"] == 0

        await local.dispatch("INTERACTION_CREATE", _interaction("session", "stop"))
        await api.wait_for_call(
            lambda c: c[1] == f"webhooks/{APP_ID}/tok-stop" and "Session stopped" in str(c[2])
        )
        assert local.voice_states[-1]["channel_id"] is None  # the bot left voice
        assert session._stopped
        assert packets("received") == 0.0  # the stopped table's receiver is no longer tracked
    finally:
        await bot.close()
        await asyncio.wait_for(runner, timeout=10)


async def _eventually(condition: Any, timeout_s: float = 10.0) -> None:
    """Wait for state the bot exposes no event for (it changes on discord.py's own tasks)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
