"""The local voice server's relay forgets a silent bot endpoint as NATs and voice servers do.

A raw UDP socket plays the bot (IP discovery, keepalives); a player in the server's DAVE group
talks. Nothing of Glyphoxa's runs here: this checks the double the idle-voice tests rely on.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator

import pytest

from bot.audio.voice.keepalive import keepalive_packet
from bot.bench.doubles.local_discord.tls import self_signed_tls
from bot.bench.doubles.local_discord.voice_server import LocalVoiceServer

PLAYER = 77


@pytest.fixture
async def server() -> AsyncIterator[LocalVoiceServer]:
    server = LocalVoiceServer(channel_id=1, bot_id=2, tls=self_signed_tls())
    await server.start()
    await server.join(PLAYER)
    await server.join(PLAYER + 1)  # a group of two: the player's DAVE session is ready
    server.forget_after_s = 0.3
    try:
        yield server
    finally:
        await server.close()


def _udp_address(server: LocalVoiceServer) -> tuple[str, int]:
    return server.udp.address


async def _discover(bot: socket.socket, server: LocalVoiceServer) -> None:
    request = bytearray(74)
    struct.pack_into(">HHI", request, 0, 1, 70, server.bot_ssrc)
    bot.sendto(bytes(request), _udp_address(server))
    await asyncio.wait_for(asyncio.get_running_loop().sock_recv(bot, 100), timeout=5)


async def _until(condition: object, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110 - time passing
            await asyncio.sleep(0.02)


async def test_a_silent_endpoint_is_forgotten_until_it_sends_again(
    server: LocalVoiceServer,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as bot:
        bot.bind(("127.0.0.1", 0))
        bot.setblocking(False)
        await _discover(bot, server)
        assert server.send(PLAYER, b"\x01\x02\x03")  # fresh: relayed
        await _until(server.bot_forgotten)  # nothing from the bot for 0.3 s
        assert not server.send(PLAYER, b"\x01\x02\x03")
        assert server.stats.forgotten == 1
        bot.sendto(keepalive_packet(0), _udp_address(server))
        await _until(lambda: server.stats.keepalives == 1)
        assert server.send(PLAYER, b"\x01\x02\x03")  # the keepalive opened the path again
        assert [n for _, n in server.stats.keepalive_log] == [0]


async def test_a_lost_endpoint_needs_a_new_ip_discovery(server: LocalVoiceServer) -> None:
    server.forget_after_s = None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as bot:
        bot.bind(("127.0.0.1", 0))
        bot.setblocking(False)
        await _discover(bot, server)
        server.lose_bot_endpoint()
        bot.sendto(keepalive_packet(1), _udp_address(server))
        await _until(lambda: server.stats.keepalives == 1)
        assert not server.send(PLAYER, b"\x01\x02\x03")  # keepalives do not bring it back
        await _discover(bot, server)  # a rejoin's new voice session does
        assert server.send(PLAYER, b"\x01\x02\x03")
