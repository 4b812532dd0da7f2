"""The voice connection's UDP keepalive: 8 bytes every 5 s, as discord.js's ``VoiceUDPSocket``.

discord.py sends nothing on the voice UDP socket while nothing plays (only websocket
heartbeats). A NAT, or a voice server that forgets endpoints it has not heard from for a while,
then stops relaying the players' audio to the bot, and nothing notices: the bot is deaf until
it happens to speak. discord.js keeps the path open with an 8-byte datagram every 5 s, a
little-endian counter (``writeUInt32LE`` into an 8-byte buffer: four counter bytes, then four
zero bytes), sent from the socket's creation; upstream Glyphoxa (Go) went deaf after 13-15 idle
minutes in real Discord until it did the same. :class:`UdpKeepalive` sends that datagram from
the event loop, on whatever socket the connection has at the moment (a voice server move or a
reconnect gives it a new one), from IP discovery until the connection ends, whether or not
audio is playing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable

__all__ = ["KEEPALIVE_INTERVAL_S", "UdpKeepalive", "keepalive_packet"]

log = logging.getLogger(__name__)

KEEPALIVE_INTERVAL_S = 5.0
_COUNTER_MOD = 2**32  # discord.js wraps its counter after 2**32 - 1


def keepalive_packet(counter: int) -> bytes:
    """The 8-byte keepalive datagram carrying ``counter`` (as discord.js builds it)."""
    return struct.pack("<Q", counter % _COUNTER_MOD)


class UdpKeepalive:
    """Sends :func:`keepalive_packet` through ``send`` every ``interval_s`` on the event loop.

    Args:
        send: sends one datagram on the connection's current socket; returns False when there
            is none to send on yet (before IP discovery, or a socket being replaced).
        interval_s: seconds between keepalives.
    """

    def __init__(
        self, send: Callable[[bytes], bool], *, interval_s: float = KEEPALIVE_INTERVAL_S
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.interval_s = interval_s
        self._send = send
        self._kicked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.counter = 0
        """The next keepalive's counter."""
        self.sent = 0
        self.skipped = 0
        """Ticks with no socket to send on."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def kick(self) -> None:
        """IP discovery just finished (a new or moved connection): send one now, then every
        ``interval_s``. Starts the keepalive on first use; call on the event loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="voice-keepalive")
        self._kicked.set()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def close(self) -> None:
        """Stop without waiting (from a synchronous cleanup)."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kicked.wait(), self.interval_s)
            self._kicked.clear()
            self.send_one()

    def send_one(self) -> bool:
        """Send the next keepalive now; False if there was no socket to send it on."""
        if not self._send(keepalive_packet(self.counter)):
            self.skipped += 1
            return False
        self.counter = (self.counter + 1) % _COUNTER_MOD
        self.sent += 1
        return True
