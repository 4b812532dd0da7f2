"""The close code and reason the voice server sent, which discord.py 2.7.1 does not keep.

When Discord closes the voice websocket (4021 rate limited, 4014 disconnected, 4006 session no
longer valid, ...), discord.py's ``poll_event`` raises ``ConnectionClosed`` with its *own* last
close code (1000 once it has closed the socket itself) and drops the reason. The log line and
the DM's message then say "close code 1000", which explains nothing. A :class:`CloseWatch`
reads each close frame as it comes off the socket, before discord.py handles it, and keeps
the server's code and reason for the table to report.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

__all__ = ["CloseWatch", "ServerClose"]

log = logging.getLogger(__name__)

_CLOSES = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING)


@dataclass(frozen=True, slots=True)
class ServerClose:
    """A close frame from the voice server."""

    code: int
    reason: str = ""

    def describe(self) -> str:
        """``close code 4021 (rate limited)``."""
        return f"close code {self.code}" + (f" ({self.reason})" if self.reason else "")


class CloseWatch:
    """Watches the aiohttp sockets of one voice connection's websockets, one after another."""

    def __init__(self) -> None:
        self.last: ServerClose | None = None
        """The latest close the server sent (None until one came, or after :meth:`clear`)."""
        self._watched: Any = None

    def watch(self, socket: Any) -> None:
        """Read the close frames of ``socket`` (an ``aiohttp.ClientWebSocketResponse``; a new
        one after each reconnect, so this is called for every gateway message and only wraps
        a socket it has not seen). A socket without ``receive`` (a stand-in that is fed its
        messages another way) is left alone."""
        found = getattr(socket, "receive", None)
        if found is None or socket is self._watched:
            return
        self._watched = socket
        receive: Callable[..., Awaitable[aiohttp.WSMessage]] = found

        async def receive_and_note(*args: Any, **kwargs: Any) -> aiohttp.WSMessage:
            message = await receive(*args, **kwargs)
            if message.type in _CLOSES and isinstance(message.data, int):
                self.last = ServerClose(message.data, str(message.extra or "").strip())
                log.warning("the voice server closed the connection: %s", self.last.describe())
            return message

        socket.receive = receive_and_note

    def clear(self) -> None:
        """A connection is up again: an older close no longer explains anything."""
        self.last = None
