"""The local voice server's UDP side: IP discovery, relaying players' packets to the bot, and
what the bot sends back (audio, keepalives), counted.

Like a real path through NATs and voice servers, the relay can forget the bot's UDP endpoint once
it has been silent for ``forget_after_s`` (nothing from it: no audio, no keepalive, no IP
discovery): packets for it are dropped until it sends again, as a NAT maps an endpoint again when
it sends. :meth:`UdpRelay.lose_bot_endpoint` is worse: the server stops relaying to the bot until
its next IP discovery (a new voice session), which only a rejoin brings (the stall the bot's
watchdog must notice).
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

__all__ = ["KEEPALIVE_SIZE", "ServerStats", "UdpRelay", "ip_discovery_reply"]

KEEPALIVE_SIZE = 8
"""The bot's UDP keepalive datagram (discord.js's: a little-endian counter in 8 bytes)."""


def ip_discovery_reply(data: bytes, addr: tuple[str, int]) -> bytes | None:
    """The voice server's answer to a client's IP discovery request (74 bytes, type 1): the
    address the datagram came from. None: ``data`` is not such a request (RTP from the bot)."""
    if len(data) != 74 or data[1] != 1:
        return None
    reply = bytearray(74)
    struct.pack_into(">HHI", reply, 0, 2, 70, struct.unpack_from(">I", data, 4)[0])
    reply[8 : 8 + len(addr[0])] = addr[0].encode()
    struct.pack_into(">H", reply, 72, addr[1])
    return bytes(reply)


@dataclass(slots=True)
class ServerStats:
    identifies: int = 0
    resumes: int = 0
    key_packages: int = 0
    invalid_commits: int = 0
    transitions: int = 0
    relayed: int = 0
    lost: int = 0
    """Player packets dropped by simulated loss or an outage."""
    forgotten: int = 0
    """Player packets not relayed because the bot's endpoint was forgotten or lost."""
    welcomes: int = 0
    """DAVE welcomes sent to the bot: one per (re)join that finished the handshake."""
    from_bot: int = 0
    """Datagrams from the bot other than IP discovery and keepalives (its audio)."""
    recent_from_bot: deque[bytes] = field(default_factory=lambda: deque(maxlen=500))
    keepalives: int = 0
    """The bot's 8-byte UDP keepalives received."""
    keepalive_log: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=1000))
    """(``time.monotonic()``, counter) of each keepalive."""
    bot_datagram_times: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    """``time.monotonic()`` of each datagram from the bot (audio, keepalives, discovery)."""


class UdpRelay(asyncio.DatagramProtocol):
    """One voice server's UDP endpoint (``create_datagram_endpoint(lambda: relay, ...)``).

    Args:
        stats: the server's counters.
        down: True while the server is unreachable (an outage): nothing in, nothing out.
        seed: for the simulated packet loss.
    """

    def __init__(self, stats: ServerStats, down: Callable[[], bool], seed: int) -> None:
        self.stats = stats
        self._down = down
        self.rng = random.Random(seed)
        self.loss = 0.0
        """Share of players' packets dropped at random."""
        self.forget_after_s: float | None = None
        """Stop relaying to the bot once its endpoint has been silent this long (None: never);
        it is relayed to again as soon as it sends anything."""
        self.transport: asyncio.DatagramTransport | None = None
        self._bot_addr: tuple[str, int] | None = None
        self._bot_heard_at = 0.0
        self._endpoint_lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.DatagramTransport", transport)

    @property
    def address(self) -> tuple[str, int]:
        """Where the bot sends (host, port)."""
        assert self.transport is not None
        host, port = self.transport.get_extra_info("sockname")
        return str(host), int(port)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def lose_bot_endpoint(self) -> None:
        """Forget the bot's endpoint and relay nothing to it until its next IP discovery
        (keepalives and audio do not bring it back; a rejoin does)."""
        self._endpoint_lost = True

    def bot_forgotten(self) -> bool:
        """A packet for the bot would be dropped now (no endpoint, lost, or silent too long)."""
        if self._bot_addr is None or self._endpoint_lost:
            return True
        forget = self.forget_after_s
        return forget is not None and time.monotonic() - self._bot_heard_at > forget

    def bot_datagrams_between(self, start: float, end: float) -> int:
        """Datagrams the bot sent in ``[start, end)`` (``time.monotonic()``)."""
        return sum(1 for at in self.stats.bot_datagram_times if start <= at < end)

    def relay(self, datagram: bytes) -> bool:
        """Send a player's packet to the bot; False if it did not go (counted why)."""
        if self._down() or self._bot_addr is None or self.transport is None:
            self.stats.lost += 1
            return False
        if self.bot_forgotten():
            self.stats.forgotten += 1
            return False
        if self.loss and self.rng.random() < self.loss:
            self.stats.lost += 1
            return False
        self.transport.sendto(datagram, self._bot_addr)
        self.stats.relayed += 1
        return True

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self._down():
            return
        now = time.monotonic()
        self.stats.bot_datagram_times.append(now)
        reply = ip_discovery_reply(data, addr)
        if reply is not None:
            self._bot_addr, self._bot_heard_at, self._endpoint_lost = addr, now, False
            assert self.transport is not None
            self.transport.sendto(reply, addr)
            return
        if not self._endpoint_lost:  # a NAT maps the endpoint again when it sends
            self._bot_addr, self._bot_heard_at = addr, now
        if len(data) == KEEPALIVE_SIZE:
            self.stats.keepalives += 1
            self.stats.keepalive_log.append((now, int.from_bytes(data, "little")))
            return
        self.stats.from_bot += 1
        self.stats.recent_from_bot.append(data)
