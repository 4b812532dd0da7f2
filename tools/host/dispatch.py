"""Runs one tool call on its server and says what the outcome means for the tool's health.

Bad input and protocol failures are told apart the same way for built-ins and MCP tools:

- the tool answering that it cannot do what was asked (a built-in's ``ToolError``, an MCP
  ``isError`` result, a JSON-RPC "invalid params" error) is the model's mistake: the model reads
  it, the tool's health is untouched, so a model's repeated mistakes never demote a tool;
- a crash, a timeout, a broken connection, any other JSON-RPC error or a malformed result is
  the tool failing: it counts against the tool's error rate, and a broken connection is
  checked for liveness. A Glyphoxa built-in served remotely marks its crashes
  (``_meta["io.glyphoxa/failure"] = "crash"``), so they count there too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import mcp.types as mt
import pydantic
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT

from tools.caller import current_caller
from tools.host.connections import ServerDown
from tools.host.content import ShapedResult, from_mcp_result, from_value
from tools.host.registry import ToolEntry
from tools.host.tasks import TaskFailed
from tools.host.types import ResultStatus
from tools.spec import FAILURE_META_KEY, ToolError

__all__ = ["Outcome", "run_entry"]

log = logging.getLogger(__name__)

Health = Literal["ok", "failure", "skip"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call produced and how it counts: ``ok``/``failure`` go into the tool's rolling
    window, ``skip`` does not (the server was down: not the tool's fault)."""

    status: ResultStatus
    shaped: ShapedResult
    health: Health


async def run_entry(
    entry: ToolEntry,
    arguments: dict[str, Any],
    abandon: Callable[[asyncio.Task[Any]], None],
) -> Outcome:
    """Run ``entry`` with validated ``arguments`` within its hard timeout."""
    try:
        if entry.handler is not None:
            async with asyncio.timeout(entry.timeout_s):
                value = await entry.handler(**arguments)
            return Outcome("ok", from_value(value), "ok")
        raw = await _mcp_call(entry, arguments, abandon)  # enforces the timeout itself
    except TimeoutError:
        text = f"tool {entry.name} timed out after {entry.timeout_s * 1000:.0f} ms"
        return Outcome("timeout", ShapedResult(text), "failure")
    except ToolError as error:
        return Outcome("error", ShapedResult(str(error)), "ok")
    except Exception as error:  # a crash of the tool or its server is the LLM's to read
        return _failed(entry, error)
    shaped = from_mcp_result(raw)
    if not raw.is_error:
        return Outcome("ok", shaped, "ok")
    crashed = (raw.meta or {}).get(FAILURE_META_KEY) == "crash"
    return Outcome("error", shaped, "failure" if crashed else "ok")


def _failed(entry: ToolEntry, error: Exception) -> Outcome:
    if entry.handler is not None:
        log.exception("built-in tool %s crashed", entry.name)
        text = f"tool {entry.name} crashed: {type(error).__name__}: {error}"
        return Outcome("error", ShapedResult(text), "failure")
    if isinstance(error, ServerDown):
        text = f"tool {entry.name} is unavailable: {error}; try again later"
        return Outcome("error", ShapedResult(text), "skip")
    if isinstance(error, MCPError) and error.code == INVALID_PARAMS:
        text = f"the server rejected the arguments for {entry.name}: {error.message}"
        return Outcome("invalid", ShapedResult(text), "ok")
    if isinstance(error, pydantic.ValidationError | TaskFailed | RuntimeError):
        # A malformed result (or one breaking its output schema): the server answered, but
        # not with anything usable. The connection itself is fine.
        log.warning("MCP tool %s sent an unusable result: %s", entry.name, _first_line(error))
        text = f"tool {entry.name} failed: {_first_line(error)}"
        return Outcome("error", ShapedResult(text), "failure")
    log.warning("MCP tool %s failed: %s: %s", entry.name, type(error).__name__, error)
    if not isinstance(error, MCPError) or error.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
        entry.connection.report_failure(error)  # transport trouble: is the server still there?
    text = f"tool {entry.name} failed: {error or type(error).__name__}"
    return Outcome("error", ShapedResult(text), "failure")


async def _mcp_call(
    entry: ToolEntry,
    arguments: dict[str, Any],
    abandon: Callable[[asyncio.Task[Any]], None],
) -> mt.CallToolResult:
    """Over HTTP the request runs in its own task, so the hard timeout never waits for the
    SDK's courtesy cancel (a POST, shielded for up to 5 s) to reach a hung server; the
    abandoned task finishes that in the background. Over stdio that cancel is one line into
    a pipe, so the call stays in the caller's task and saves the task hop."""
    connection = entry.connection
    as_task = entry.task_support == "required"
    caller = current_caller()
    meta = caller.to_meta() if caller is not None else None
    call = connection.call_tool(entry.original, arguments, as_task=as_task, meta=meta)
    if not connection.detach_calls:
        async with asyncio.timeout(entry.timeout_s):
            return await call  # type: ignore[no-any-return]
    task = asyncio.create_task(call, name=f"mcp-call:{entry.name}")
    try:
        done, _ = await asyncio.wait({task}, timeout=entry.timeout_s)
    except asyncio.CancelledError:
        abandon(task)
        raise
    if not done:
        abandon(task)
        raise TimeoutError
    return task.result()  # type: ignore[no-any-return]


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
