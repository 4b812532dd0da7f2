"""One MCP server connection: its own task, its own ``AsyncExitStack``, restart on crash.

anyio cancel scopes must be exited by the task that entered them, so everything a connection
opens (subprocess or HTTP client, transport, ``ClientSession``) is entered and closed inside
the connection's task. Other tasks only send requests through the live session.

The protocol version is negotiated as the SDK's ``Client`` does (``server/discover``, else the
``initialize`` handshake). Tool list changes arrive as ``notifications/tools/list_changed`` on
a handshake-era connection and as ``subscriptions/listen`` events on a 2026-07-28 one; either
way the tools are listed again and the host's registry rebuilt.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import shlex
import time
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from campaigns.basics import GlyphoxaError
from tools.config import McpServerConfig
from tools.host.auth import build_http_client
from tools.host.stream_watch import StderrPump, WatchedStream
from tools.host.tasks import call_as_task

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
        delay: float = min(self.max_backoff_s, self.initial_backoff_s * (2 ** max(0, attempt - 1)))
        return delay


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
        self.tasks = False
        """The server accepts task-augmented ``tools/call`` (2025-11-25 tasks capability)."""
        self._dispatcher: JSONRPCDispatcher[Any] | None = None
        self._owned: set[asyncio.Task[Any]] = set()
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
        for task in list(self._owned):
            task.cancel()
        await asyncio.gather(*self._owned, return_exceptions=True)
        self._set_state(ServerState.STOPPED)

    @property
    def session_protocol(self) -> str | None:
        """The negotiated protocol version while connected."""
        return self.session.protocol_version if self.session is not None else None

    def describe_down(self) -> str:
        """``down (ping failed: ...)``, ``connecting``: for messages to the model and the DM."""
        state = self.state.value if self.state is not ServerState.UP else "not answering"
        return f"{state} ({self.last_error})" if self.last_error else state

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` in a task this connection owns (cancelled by ``stop``)."""
        task = asyncio.create_task(work, name=f"mcp-aside:{self.name}")
        self._owned.add(task)
        task.add_done_callback(self._owned.discard)

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

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        as_task: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> mt.CallToolResult:
        """One ``tools/call``; ``as_task`` runs it as a task and polls it (``tools.host.tasks``);
        ``meta`` goes into the request's ``_meta`` (the caller, ``tools.caller``)."""
        session, dispatcher = self.session, self._dispatcher
        if session is None or dispatcher is None or self.state is not ServerState.UP:
            raise ServerDown(f"MCP server {self.name!r} is {self.state.value}")
        if as_task:
            return await call_as_task(dispatcher, name, arguments, spawn=self.spawn, meta=meta)
        return await session.call_tool(name, arguments, meta=meta)  # type: ignore[arg-type]

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
                    log.info(
                        "MCP server %s up with %d tools (protocol %s)",
                        self.name,
                        len(tools),
                        session.protocol_version,
                    )
                    self._set_state(ServerState.UP)  # also publishes the new tools
                    self._attempted.set()
                    if _modern(session):
                        listener = asyncio.create_task(
                            self._listen(session), name=f"mcp-listen:{self.name}"
                        )
                        stack.push_async_callback(_cancel_and_wait, listener)  # before the session
                    await self._serve(session)
                    self.last_error = self.last_error or "connection closed (server exited?)"
            except TimeoutError:
                self.last_error = f"no answer within {self.config.connect_timeout_s:g} s"
            except Exception as error:  # any failure of a server is reported, then retried
                self.last_error = describe_error(error)
            finally:
                self.session, self._dispatcher = None, None
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

    async def _listen(self, session: ClientSession) -> None:
        """2026-07-28: tool list changes come as ``subscriptions/listen`` events."""
        while self.session is session:
            try:
                async with listen(session, tools_list_changed=True) as subscription:
                    async for _event in subscription:
                        self._refresh_pending = True
                        self._wake.set()
                return  # the server closed the stream gracefully: it is going away
            except ListenNotSupportedError:
                return
            except MCPError as error:
                log.info("MCP server %s does not accept subscriptions/listen: %s", self.name, error)
                return
            except SubscriptionLost:  # no replay: listen again and list the tools again
                self._refresh_pending = True
                self._wake.set()
                await asyncio.sleep(self.policy.initial_backoff_s)

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        self._dead, self._refresh_pending, self._check_pending = False, False, False
        self._wake.clear()
        config = self.config
        if config.transport == "stdio":
            params = _stdio_parameters(config)
            pump = StderrPump(config.name)
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
        dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(
            WatchedStream(read, self._mark_dead), write
        )
        session = ClientSession(
            dispatcher=dispatcher,
            message_handler=self._message_handler,
            client_info=mt.Implementation(name="glyphoxa", version="0.1.0"),
        )
        await stack.enter_async_context(session)
        try:
            await session.discover()  # 2026-07-28 and later
        except MCPError:
            await session.initialize()  # a handshake-era server
        self._dispatcher = dispatcher
        self.tasks = _accepts_tool_tasks(session.server_capabilities)
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


async def _cancel_and_wait(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _modern(session: ClientSession) -> bool:
    return session.discover_result is not None


def _accepts_tool_tasks(capabilities: mt.ServerCapabilities | None) -> bool:
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    tools = requests.tools if requests is not None else None
    return tools is not None and tools.call is not None


async def _list_all_tools(session: ClientSession) -> list[mt.Tool]:
    result = await session.list_tools()
    tools = list(result.tools)
    while result.next_cursor:
        page = mt.PaginatedRequestParams(cursor=result.next_cursor)
        result = await session.list_tools(params=page)
        tools.extend(result.tools)
    return tools
