"""One side of a peer comparison: a process that answers player lines over the line protocol.

The bench starts each pipeline in its own process (:mod:`bot.bench.line_protocol`), says one
line at a time to it and waits for its timing; a tool call the process asks for is handed to
``on_tool_call`` while the line runs. A side that dies, answers nonsense or stays silent fails
with :class:`SideFailed`: one line saying which side, what happened and its last error output.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from bot.bench.line_protocol import LineRequest, LineTiming, decode, encode
from campaigns.basics import GlyphoxaError

__all__ = ["LineServer", "SideFailed", "ToolHandler"]

log = logging.getLogger(__name__)

ToolHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Runs a side's ``tool_call`` message and returns the ``tool_result`` message for it."""

_STDERR_LINES = 400


class SideFailed(GlyphoxaError):
    """A side of the comparison cannot go on; the message says why in one line."""


class LineServer:
    """``async with LineServer("pipecat", argv) as side:`` starts the process and waits for its
    ``ready`` message; ``await side.answer(request)`` says one line.

    Args:
        name: how messages name this side ("glyphoxa", "pipecat").
        argv: the command; it must speak the line protocol on stdin and stdout.
        env: its environment (default: ours).
        ready_timeout_s: how long loading its models may take.
        on_tool_call: runs the tool calls it asks for (without it they fail as unavailable).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        ready_timeout_s: float = 300.0,
        on_tool_call: ToolHandler | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env) if env is not None else dict(os.environ)
        self.cwd = cwd
        self.ready_timeout_s = ready_timeout_s
        self.on_tool_call = on_tool_call
        self.ready: dict[str, Any] = {}
        """The side's ``ready`` message (what it loaded, its settings)."""
        self._process: asyncio.subprocess.Process | None = None
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._tasks: list[asyncio.Task[None]] = []
        self._tool_tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> LineServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> dict[str, Any]:
        """Start the process; returns its ``ready`` message."""
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
            )
        except OSError as error:
            raise SideFailed(f"{self.name}: cannot start {self.argv[0]}: {error}") from None
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"bench-{self.name}-stdout"),
            asyncio.create_task(self._read_stderr(), name=f"bench-{self.name}-stderr"),
        ]
        message = await self._next("ready", self.ready_timeout_s, "loading")
        self.ready = message
        return message

    async def answer(self, request: LineRequest, timeout_s: float = 300.0) -> LineTiming:
        """Say one line; its timing (an unanswered line has ``error`` set, the side goes on)."""
        await self._send(request.message())
        message = await self._next("timing", timeout_s, f"line {request.index}")
        timing = LineTiming.from_message(message)
        if timing.index != request.index:
            raise SideFailed(
                f"{self.name} answered line {timing.index} when asked line {request.index}"
            )
        return timing

    async def run_tool(self, call: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
        """Have this side run a tool call (ours runs the peer's on its tool host)."""
        await self._send({**call, "type": "tool_call"})
        return await self._next("tool_result", timeout_s, f"tool {call.get('name')}")

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Ask the process to quit; kill it if it does not within ``timeout_s``."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(OSError, RuntimeError):
                await self._send({"type": "quit"})
                assert process.stdin is not None
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), timeout_s)
            except TimeoutError:
                process.kill()
                await process.wait()
        for task in [*self._tasks, *self._tool_tasks]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._tool_tasks, return_exceptions=True)
        self._tasks = []

    def stderr_tail(self) -> list[str]:
        return list(self._stderr)

    # -- internals --------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            raise SideFailed(f"{self.name} is not running{self._why()}")
        try:
            process.stdin.write(encode(message))
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise SideFailed(f"{self.name} stopped reading its input{self._why()}") from None

    async def _next(self, kind: str, timeout_s: float, doing: str) -> dict[str, Any]:
        try:
            message = await asyncio.wait_for(self._messages.get(), timeout_s)
        except TimeoutError:
            raise SideFailed(
                f"{self.name} gave no {kind} within {timeout_s:g} s ({doing}){self._why()}"
            ) from None
        if message is None:
            code = self._process.returncode if self._process is not None else None
            raise SideFailed(f"{self.name} exited (code {code}) while {doing}{self._why()}")
        if message["type"] == "error":
            raise SideFailed(f"{self.name} failed while {doing}: {message.get('message')}")
        if message["type"] != kind:
            raise SideFailed(f"{self.name} sent {message['type']!r} when {kind!r} was due")
        return message

    async def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            async for raw in self._process.stdout:
                message = decode(raw)
                if message is None:
                    self._stderr.append(raw.decode(errors="replace").rstrip())
                elif message["type"] == "tool_call" and self.on_tool_call is not None:
                    task = asyncio.create_task(self._tool(message), name=f"bench-{self.name}-tool")
                    self._tool_tasks.add(task)
                    task.add_done_callback(self._tool_tasks.discard)
                elif message["type"] == "tool_call":
                    await self._send({"type": "tool_result", "id": message.get("id"),
                                      "content": "no tools here", "is_error": True})  # fmt: skip
                else:
                    await self._messages.put(message)
        finally:
            if self._process.returncode is None:
                await self._process.wait()
            await self._messages.put(None)

    async def _tool(self, call: dict[str, Any]) -> None:
        assert self.on_tool_call is not None
        try:
            result = await self.on_tool_call(call)
        except GlyphoxaError as error:
            result = {"content": str(error), "is_error": True}
        with contextlib.suppress(SideFailed):
            await self._send({**result, "type": "tool_result", "id": call.get("id")})

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self._stderr.append(line)
                log.debug("%s: %s", self.name, line)

    def _why(self) -> str:
        """The side's last error output, as the tail of a one-line message."""
        for line in reversed(self._stderr):
            words = line.strip()
            if any(mark in words for mark in ("Error", "error", "ERROR", "failed", "Traceback")):
                return f"; its last error: {words[:300]}"
        return f"; its last output: {self._stderr[-1].strip()[:300]}" if self._stderr else ""
