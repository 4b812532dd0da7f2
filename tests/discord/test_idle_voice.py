"""Idle voice costs nothing and never goes deaf, against the local Discord (real protocols).

While nobody talks the bot sends only discord.js's 8-byte UDP keepalive every 5 s; an NPC's line
goes out with the speaking flag and ends with five silence frames; behind a relay that forgets
silent endpoints the players are still heard after a long idle stretch; and when the relay stops
sending to the bot while a player talks, the stall watchdog rejoins (and tells the DM when it
happens again). The full 20-minute idle stretch runs in ``glyphoxa bench soak``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.receiver import VoiceReceiver
from campaigns.basics import AudioChunk

from .discord_api import BOT_ID
from .voice_world import ARIA, World, open_world, table_session, voice_event

pytestmark = pytest.mark.slow

_KEEPALIVE_S = 5.0


@pytest.fixture
async def world(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with open_world(monkeypatch) as world:
        yield world


@pytest.fixture
async def forgetful_world(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    """The voice server forgets a bot endpoint silent for 8 s (a NAT, or Discord's relay)."""
    async with open_world(monkeypatch, forget_after_s=8.0) as world:
        yield world


async def _quiet(world: World) -> None:
    """Until the bot has sent nothing but keepalives for a second (a last utterance ended)."""
    server = world.local.voice
    async with asyncio.timeout(15):
        while True:
            before = server.stats.from_bot
            await asyncio.sleep(1.0)
            if server.stats.from_bot == before:
                return


async def _quiet_table(world: World, stt: Any) -> Any:
    """A running table that hears Aria, once its playback has gone quiet."""
    table = await world.start_table(table_session(world, stt))
    await world.hears(ARIA)
    await _quiet(world)
    return table


async def test_an_idle_table_sends_one_keepalive_every_5_s_and_nothing_else(
    world: World, whisper_stt: Any
) -> None:
    table = await _quiet_table(world, whisper_stt)
    server = world.local.voice
    started, audio_before = time.monotonic(), server.stats.from_bot
    await asyncio.sleep(2 * _KEEPALIVE_S + 1)  # the idle stretch under test
    ended = time.monotonic()
    keepalives = [(at, n) for at, n in server.stats.keepalive_log if started <= at < ended]
    assert len(keepalives) in (2, 3), keepalives
    assert [n for _, n in keepalives] == list(range(keepalives[0][1], keepalives[-1][1] + 1))
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(keepalives)]
    assert all(_KEEPALIVE_S - 1 <= gap <= _KEEPALIVE_S + 1.5 for gap in gaps), gaps
    assert server.stats.from_bot == audio_before  # no audio, no silence frames
    assert server.bot_datagrams_between(started, ended) <= ended - started  # <= 1 a second
    assert not [flag for at, flag in server.bot_speaking if at >= started]
    voice = table.voice
    assert voice is not None and voice.keepalive.sent >= len(keepalives)


async def test_an_npc_line_is_flagged_and_ends_with_five_silence_frames(
    world: World, whisper_stt: Any
) -> None:
    table = await _quiet_table(world, whisper_stt)
    server = world.local.voice
    server.stats.recent_from_bot.clear()
    flags_before = len(server.bot_speaking)
    t = np.arange(48_000) / 48_000  # one second of the NPC's voice
    handle = table.session.mixer.speak("Bartok")
    handle.feed(AudioChunk((8000 * np.sin(2 * np.pi * 220 * t)).astype("<i2").tobytes(), 48_000))
    handle.finish()
    await asyncio.wait_for(handle.wait(), timeout=10)
    await _quiet(world)
    assert [flag for _, flag in server.bot_speaking[flags_before:]] == [1, 0]
    player = server.players[ARIA]
    ears = VoiceReceiver(
        asyncio.get_running_loop(), lambda f: None, dave=DaveReceiver(lambda: (player.session, 1))
    )
    ears.set_transport(server.mode, server.secret_key)
    ears.map_ssrc(server.bot_ssrc, BOT_ID)
    for datagram in list(server.stats.recent_from_bot):
        ears.process(datagram)
    counters = ears.snapshot()
    assert counters.accepted == 50 + 5 and counters.silence == 5  # the line, then the end
    assert counters.dropped[DropReason.DAVE_FAILED] == 0


async def test_players_are_heard_after_a_long_idle_behind_a_relay_that_forgets(
    forgetful_world: World, whisper_stt: Any
) -> None:
    world = forgetful_world
    await world.start_table(table_session(world, whisper_stt))
    await world.hears(ARIA)
    server = world.local.voice
    await asyncio.sleep(2.5 * 8.0)  # idle for more than twice the relay's memory
    assert not server.bot_forgotten()  # the keepalives kept the endpoint alive
    assert await world.hears(ARIA) < 2.0  # the first words after the idle stretch
    assert server.stats.forgotten == 0
    assert world.table is not None and world.table.link is not None
    assert world.table.link.rejoins == 0  # heard without any recovery


async def test_the_stall_watchdog_rejoins_and_tells_the_dm_when_it_repeats(
    world: World, whisper_stt: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The voice server stops relaying to the bot (keepalives do not bring it back): SPEAKING
    without packets, the watchdog rejoins well within 30 s; the second stall tells the DM."""
    table = await world.start_table(table_session(world, whisper_stt), stall_after_s=3.0)
    await world.hears(ARIA)
    for stall in (1, 2):
        first = table.voice
        world.local.voice.lose_bot_endpoint()
        started = time.monotonic()
        assert await world.hears(ARIA, timeout_s=30) < 30  # Aria talks on until heard again
        assert time.monotonic() - started < 30
        assert table.voice is not first and table.link is not None
        assert table.link.rejoins == stall
        assert voice_event(world, "stall", "relay") == stall
    said = [r.getMessage() for r in caplog.records if "stalled" in r.getMessage()]
    assert any("Aria was speaking" in line and "cause: relay" in line for line in said), said
    async with asyncio.timeout(10):
        await world.local.message_posted.wait()
    notices = world.notices()
    assert len(notices) == 1 and "stalled 2 times" in notices[0], notices
    assert not world.ended.is_set()
