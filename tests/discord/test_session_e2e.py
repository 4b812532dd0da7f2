"""`/session start` to `/session stop` against a local Discord speaking the real protocols.

The bot is the production GlyphoxaBot. The interaction arrives as an INTERACTION_CREATE
dispatch on the main gateway; joining voice runs discord.py's whole flow (op 4, voice server
update, TLS voice websocket, UDP IP discovery, DAVE handshake); a remote member then speaks
DAVE-encrypted audio over UDP, which must reach the real TableSession as that player's lane,
while the bot's playback (the session's mixer) must arrive encrypted for the remote member.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.receiver import VoiceReceiver
from bot.bench.doubles.local_discord import LocalDiscord
from bot.frontends.discord_bot import GlyphoxaBot, TableParts
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics
from campaigns.memory.table_registry import TableRegistry

from .conftest import OpenWorld
from .discord_api import APP_ID, BOT_ID, FakeDiscordApi
from .guild_payloads import member

GUILD, TEXT, VOICE, DM_ROLE = 9100, 9101, 9102, 9103
DM_USER, PLAYER = 601, 602
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


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
        "member": {**member(DM_USER, "dm", [DM_ROLE]), "permissions": "0"},
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
async def world(local_world: OpenWorld) -> tuple[LocalDiscord, FakeDiscordApi]:
    players = {DM_USER: "dm", PLAYER: "Aria"}
    return await local_world(guild=GUILD, text=TEXT, voice=VOICE, dm_role=DM_ROLE, players=players)


async def test_session_start_hears_players_and_plays_the_mixer(
    world: tuple[LocalDiscord, FakeDiscordApi], whisper_stt: Any
) -> None:
    local, api = world
    from bot.audio.speech import EspeakTts
    from bot.table.session.session import TableSession
    from npcs.campaign import load_campaign

    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": True}}
    )
    sessions: list[TableSession] = []
    metrics = Metrics()  # the table's own registry, as METRICS is for `glyphoxa run`

    async def factory(campaign: str | None) -> TableParts:
        session = build_session(
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
        await asyncio.wait_for(local.voice.bot_welcomed.wait(), timeout=20)
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
        voice = local.voice
        player = voice.players[PLAYER]
        await voice.set_speaking(PLAYER, True)
        await _eventually(lambda: vc.receiver.user_for(player.ssrc) == PLAYER)
        assert player.speaker is not None
        quiet = player.speaker.encode(bytes(3840))
        for _ in range(15):
            voice.send(PLAYER, b"\xf8\xff\xfe")  # silence: no STT work needed
            voice.send(PLAYER, quiet)
        session = sessions[0]
        await _eventually(lambda: "Aria" in session.status().speakers)
        # The first frames opened the lane on the loop; from now on the socket thread hears them.
        for _ in range(5):
            voice.send(PLAYER, quiet)
        await _eventually(lambda: vc.receiver.snapshot().heard >= 5)
        assert vc.receiver.snapshot().delivered > 0
        # DM voice commands are read only from the lane of a member with the DM role.
        assert session.voice.dm_resolver(str(DM_USER)) and not session.voice.dm_resolver(
            str(PLAYER)
        )
        assert not session.voice.is_dm(next(iter(session.lanes)))
        assert vc.receiver.snapshot().dropped["dave_failed"] == 0

        # The receive path's counters reach the metrics registry (read at scrape time).
        def packets(outcome: str) -> float:
            return metrics.sample("glyphoxa_voice_packets_total", {"outcome": outcome}) or 0.0

        await _eventually(lambda: packets("received") >= 30)
        assert packets("received") == vc.receiver.snapshot().received
        assert packets("decrypt_failed") == 0.0
        assert "glyphoxa_voice_packets_total" in metrics.exposition()

        # The bot plays the session's mixer, only while it has audio; the remote member can
        # decrypt and decode it. (Packets sent before the bot's DAVE session was ready are
        # plain, as discord.py sends them during the transition; look only at what was sent
        # after.)
        sent = voice.stats.recent_from_bot
        sent.clear()
        await asyncio.sleep(0.3)
        assert len(sent) == 0  # nothing to play: nothing sent (keepalives are counted apart)
        session.mixer.play_cue(np.full(960 * 15, 6000, dtype=np.int16))
        await _eventually(lambda: len(sent) >= 15 + 5)  # the cue, then five silence frames
        ears = VoiceReceiver(
            asyncio.get_running_loop(),
            lambda f: None,
            dave=DaveReceiver(lambda: (player.session, 1)),
        )
        ears.set_transport(voice.mode, voice.secret_key)
        ears.map_ssrc(voice.bot_ssrc, BOT_ID)
        for datagram in list(sent):
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


async def test_a_kicked_table_tells_the_dm_and_the_cog_forgets_it(
    world: tuple[LocalDiscord, FakeDiscordApi], whisper_stt: Any, tmp_path: Path
) -> None:
    """The open table's row goes too: a restarted bot must not rejoin a channel it was
    kicked from (the DM was told the session ended)."""
    local, api = world
    from bot.audio.speech import EspeakTts
    from bot.table.session.session import TableSession
    from npcs.campaign import load_campaign

    config = GlyphoxaConfig.model_validate(
        {"discord": {"guild_ids": [GUILD], "dm_role": "DM", "transcription_notice": False}}
    )
    sessions: list[TableSession] = []

    async def factory(campaign: str | None) -> TableParts:
        session = build_session(
            config=config, campaign=load_campaign(EXAMPLE), stt=whisper_stt, tts=EspeakTts(),
            engines=lambda npc: None, metrics=Metrics(),
        )  # fmt: skip
        sessions.append(session)
        return TableParts(session=session)

    registry = await TableRegistry.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    bot = GlyphoxaBot(
        config, factory, table_registry=registry, connector=aiohttp.TCPConnector(ssl=False)
    )
    runner = asyncio.create_task(bot.start("test-token"))
    try:
        await asyncio.wait_for(bot.wait_until_ready(), timeout=20)
        await local.dispatch("INTERACTION_CREATE", _interaction("session", "start"))
        await asyncio.wait_for(local.voice.bot_welcomed.wait(), timeout=20)
        await api.wait_for_call(lambda c: "Session started" in str(c[2]))
        assert await registry.get(GUILD) is not None  # recorded for a restart
        await local.kick_bot()
        notice = await api.wait_for_call(
            lambda c: c[1] == f"channels/{TEXT}/messages" and "removed from" in str(c[2])
        )
        assert "/session start" in notice[2]["content"]
        cog = bot.get_cog("TableCog")
        assert cog is not None and cog.tables == {}  # type: ignore[attr-defined]
        await _eventually(lambda: sessions[0]._stopped)
        for _ in range(200):  # the keeper removes the row in a task of its own
            if await registry.get(GUILD) is None:
                break
            await asyncio.sleep(0.02)
        assert await registry.get(GUILD) is None and not registry.holds(GUILD)
        # A new session can start right away: nothing of the old one is left in the cog.
        await local.dispatch("INTERACTION_CREATE", _interaction("session", "start"))
        started = lambda: [c for c in api.calls if "Session started" in str(c[2])]  # noqa: E731
        await api.wait_for_call(lambda c: len(started()) == 2)
    finally:
        await bot.close()
        await asyncio.wait_for(runner, timeout=10)
        await registry.close()


async def _eventually(condition: Any, timeout_s: float = 10.0) -> None:
    """Wait for state the bot exposes no event for (it changes on discord.py's own tasks)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
