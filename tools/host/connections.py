"""One MCP server connection: its own task, its own ``AsyncExitStack``, restart on crash.

anyio cancel scopes must be exited by the task that entered them, so everything a connection
opens (subprocess or HTTP client, transport, ``ClientSession``) is entered and closed inside
the connection's task. Other tasks only send requests through the live session.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import shlex
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from campaigns.errors import GlyphoxaError
from tools.config import McpServerConfig
from tools.host.auth import build_http_client

__all__ = ["McpConnection", "RestartPolicy", "ServerDown", "ServerState", "describe_error"]

log = logging.getLogger(__name__)


class ServerState(enum.StrEnum):
    CONNECTING = "connecting"
    UP = "up"
    DOWN = "down"
    """Crashed or unreachable; a restart is scheduled."""
    FAILED = "failed"
    """Gave up after ``max_restarts``."""
    STOPPED = "stopped"


class ServerDown(GlyphoxaError):
    """The tool's server is not connected right now."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """Exponential backoff between reconnects, up to a limit."""

    initial_backoff_s: float = 0.25
    max_backoff_s: float = 30.0
    max_restarts: int = 8
    stable_after_s: float = 30.0
    """A connection that stayed up this long resets the restart count."""

    def backoff(self, attempt: int) -> float:
        return min(self.max_backoff_s, self.initial_backoff_s * (2 ** max(0, attempt - 1)))


class _WatchedStream:
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

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._on_close()
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> Any:
        return self._inner.__aiter__()

    async def receive(self) -> Any:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _StderrPump:
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
        try:
            while line := await reader.readline():
                now = time.monotonic()
                if now - window_start >= self._window_s:
                    if dropped:
                        self._log.warning("(%d stderr lines suppressed)", dropped)
                    window_start, sent, dropped = now, 0, 0
                if sent < self._burst:
                    sent += 1
                    self._log.info("%s", line.decode("utf-8", "replace").rstrip())
                else:
                    dropped += 1
        finally:
            if dropped:
                self._log.warning("(%d stderr lines suppressed)", dropped)
            transport.close()

    async def stop(self) -> None:
        if not self.write_end.closed:
            self.write_end.close()
            os.close(self._read_fd)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class McpConnection:
    """Keeps one MCP server connected and its tool list current.

    ``on_change`` runs (in this connection's task) whenever the state or the tool list changes.
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        on_change: Callable[[McpConnection], None],
        policy: RestartPolicy | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.detach_calls = config.transport != "stdio"
        """Run each call in its own task (see ``Executor._mcp_call``)."""
        self.policy = policy or RestartPolicy()
        self.state = ServerState.CONNECTING
        self.tools: list[mt.Tool] = []
        self.last_error: str | None = None
        self.restarts = 0
        self.session: ClientSession | None = None
        self._on_change = on_change
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._refresh_pending = False
        self._check_pending = False
        self._dead = False
        self._attempted = asyncio.Event()
        self._up = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp-server:{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._set_state(ServerState.STOPPED)

    async def wait_attempted(self, timeout_s: float) -> None:
        """Wait until the first connect attempt finished, successful or not."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._attempted.wait()

    async def wait_up(self, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await self._up.wait()
            return True
        except TimeoutError:
            return False

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mt.CallToolResult:
        session = self.session
        if session is None or self.state is not ServerState.UP:
            raise ServerDown(f"MCP server {self.name!r} is {self.state.value}")
        return await session.call_tool(name, arguments)

    def _set_state(self, state: ServerState) -> None:
        if state is ServerState.UP:
            self._up.set()
        else:
            self._up.clear()
        if state is not self.state:
            self.state = state
            self._on_change(self)

    async def _message_handler(self, message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self._refresh_pending = True
            self._wake.set()
        elif isinstance(message, Exception):
            log.debug("MCP server %s transport error: %s", self.name, message)

    def _mark_dead(self) -> None:
        # Runs in the session's reader the moment the server's stream ends, before pending
        # calls are failed, so no caller sees the tools as healthy after its call broke.
        self._dead = True
        self._wake.set()
        if self.state is ServerState.UP:
            self._set_state(ServerState.DOWN)

    def report_failure(self, error: BaseException) -> None:
        """A call failed below the tool level; check the server is still there."""
        log.debug("MCP server %s call failed (%s); checking liveness", self.name, error)
        self._check_pending = True
        self._wake.set()

    async def _run(self) -> None:
        attempt = 0
        while True:
            connected_at: float | None = None
            try:
                async with AsyncExitStack() as stack:
                    async with asyncio.timeout(self.config.connect_timeout_s):
                        session = await self._connect(stack)
                        tools = await _list_all_tools(session)
                    connected_at = time.monotonic()
                    self.session, self.tools, self.last_error = session, tools, None
                    log.info("MCP server %s up with %d tools", self.name, len(tools))
                    self._set_state(ServerState.UP)  # also publishes the new tools
                    self._attempted.set()
                    await self._serve(session)
                    self.last_error = self.last_error or "connection closed (server exited?)"
            except TimeoutError:
                self.last_error = f"no answer within {self.config.connect_timeout_s:g} s"
            except Exception as error:  # any failure of a server is reported, then retried
                self.last_error = describe_error(error)
            finally:
                self.session = None
            log.warning("MCP server %s down: %s", self.name, self.last_error)
            self._attempted.set()
            lived = time.monotonic() - connected_at if connected_at is not None else 0.0
            if lived >= self.policy.stable_after_s:
                attempt = 0
            attempt += 1
            self.restarts += 1 if connected_at is not None else 0
            if attempt > self.policy.max_restarts:
                log.error("MCP server %s: giving up after %d attempts", self.name, attempt - 1)
                self._set_state(ServerState.FAILED)
                return
            self._set_state(ServerState.DOWN)
            await asyncio.sleep(self.policy.backoff(attempt))
            self._set_state(ServerState.CONNECTING)

    async def _serve(self, session: ClientSession) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._dead:
                return
            if self._check_pending:
                self._check_pending = False
                try:
                    async with asyncio.timeout(self.config.connect_timeout_s):
                        await session.send_ping()
                except Exception as error:  # unreachable or broken: reconnect
                    self.last_error = f"ping failed: {describe_error(error)}"
                    return
            if self._refresh_pending:
                self._refresh_pending = False
                self.tools = await _list_all_tools(session)
                log.info("MCP server %s tool list changed: %d tools", self.name, len(self.tools))
                self._on_change(self)

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        self._dead, self._refresh_pending, self._check_pending = False, False, False
        self._wake.clear()
        config = self.config
        if config.transport == "stdio":
            params = _stdio_parameters(config)
            pump = _StderrPump(config.name)
            stack.push_async_callback(pump.stop)
            transport = stdio_client(params, errlog=pump.write_end)
            read, write = await stack.enter_async_context(transport)
            pump.start()
        else:
            if not config.url:
                raise GlyphoxaError(f"MCP server {config.name!r}: streamable-http needs a url")
            client = await stack.enter_async_context(build_http_client(config))
            read, write = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        session = ClientSession(
            _WatchedStream(read, self._mark_dead),
            write,
            message_handler=self._message_handler,
            client_info=mt.Implementation(name="glyphoxa", version="0.1.0"),
        )
        await stack.enter_async_context(session)
        await session.initialize()
        return session


def describe_error(error: BaseException) -> str:
    """The innermost cause, not "unhandled errors in a TaskGroup"."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, GlyphoxaError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _stdio_parameters(config: McpServerConfig) -> StdioServerParameters:
    command = config.command
    parts = shlex.split(command) if isinstance(command, str) else list(command or [])
    if not parts:
        raise GlyphoxaError(f"MCP server {config.name!r}: stdio needs a command")
    return StdioServerParameters(
        command=parts[0], args=parts[1:], env=dict(config.env) or None, cwd=config.cwd
    )


async def _list_all_tools(session: ClientSession) -> list[mt.Tool]:
    result = await session.list_tools()
    tools = list(result.tools)
    while result.next_cursor:
        page = mt.PaginatedRequestParams(cursor=result.next_cursor)
        result = await session.list_tools(params=page)
        tools.extend(result.tools)
    return tools
