"""Stream plumbing of one MCP connection: crash detection on the read stream, stderr pump.

Kept apart from ``tools.host.connections`` (the connection's life cycle) because neither
piece knows anything about MCP: they watch a stream end and forward a child's stderr.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = ["StderrPump", "WatchedStream"]

_LAST_WORDS = 5
"""Lines held back past the burst that are still logged when the server exits."""


class WatchedStream:
    """Read stream that tells the connection when the server's side ended (EOF = crash).

    The session's reader leaves ``async with stream`` at EOF before it fails the pending
    calls, so ``on_close`` runs first; iteration goes straight to the inner stream, so the
    wrapper costs nothing per message.
    """

    def __init__(self, inner: Any, on_close: Callable[[], None]) -> None:
        self._inner = inner
        self._on_close = on_close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._on_close()
        suppress: bool | None = await self._inner.__aexit__(*exc)
        return suppress

    def __aiter__(self) -> Any:
        return self._inner.__aiter__()

    async def receive(self) -> Any:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()


class StderrPump:
    """Forwards a stdio server's stderr to our log, at most ``burst`` lines per ``window_s``."""

    def __init__(self, server: str, burst: int = 20, window_s: float = 10.0) -> None:
        self._log = logging.getLogger(f"glyphoxa.mcp.{server}")
        self._burst, self._window_s = burst, window_s
        read_fd, write_fd = os.pipe()
        self.write_end = os.fdopen(write_fd, "w")
        self._read_fd = read_fd
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        # The child holds its own copy now; closing ours lets EOF arrive when it exits.
        self.write_end.close()
        self._task = asyncio.create_task(self._pump(), name="mcp-stderr")

    async def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self._read_fd, "rb")
        )
        window_start, sent, dropped = time.monotonic(), 0, 0
        last_words: collections.deque[str] = collections.deque(maxlen=_LAST_WORDS)
        try:
            while line := await reader.readline():
                now = time.monotonic()
                if now - window_start >= self._window_s:
                    if dropped:
                        self._log.warning("(%d stderr lines suppressed)", dropped)
                    window_start, sent, dropped = now, 0, 0
                    last_words.clear()
                text = line.decode("utf-8", "replace").rstrip()
                if sent < self._burst:
                    sent += 1
                    self._log.info("%s", text)
                else:
                    dropped += 1
                    last_words.append(text)
        finally:
            # A server that floods stderr and then dies says why in its last lines: those of
            # the lines held back are logged as it exits.
            if dropped > len(last_words):
                self._log.warning("(%d stderr lines suppressed)", dropped - len(last_words))
            for text in last_words:
                self._log.info("%s", text)
            transport.close()

    async def stop(self) -> None:
        if not self.write_end.closed:
            self.write_end.close()
            os.close(self._read_fd)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
