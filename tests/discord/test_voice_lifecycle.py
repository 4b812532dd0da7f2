"""Every way a voice connection ends or moves, against the local Discord (real protocols).

The bot is a real ``discord.Client`` with a real :class:`TableRuntime` and TableSession; the local
Discord (``bot.bench.doubles.local_discord``) plays the main gateway, the REST API and the voice
server with a real DAVE group of players. After each disruption the table either hears the players
again within seconds, or it stops cleanly and tells the DM in the session's text channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from .voice_world import ARIA, BORIN, World, open_world, table_session, voice_event

pytestmark = pytest.mark.slow


@pytest.fixture
async def world(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with open_world(monkeypatch) as world:
        yield world


@pytest.fixture
async def session(world: World, whisper_stt: Any) -> Any:
    return table_session(world, whisper_stt)


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
    assert voice_event(world, "lost", table.ended.end.reason) == 1


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
        while voice_event(world, "deaf", "dave") < 1:
            await world.local.speak(ARIA, world.opus)
    assert server.stats.invalid_commits >= 1  # failure-driven recovery came first
    server.welcome_bot = True
    assert await world.hears(ARIA, timeout_s=20) < 20
    assert table.link is not None and table.link.rejoins >= 1
    assert not world.ended.is_set()
