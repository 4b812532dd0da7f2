"""Task-augmented tool calls (MCP 2025-11-25 tasks): create, poll, fetch the result, cancel.

A tool that declares ``execution.taskSupport: "required"`` refuses a plain ``tools/call``
(-32601). It is called with a ``task`` parameter instead; the server answers at once with a
task, which is polled with ``tasks/get`` (at the server's ``pollInterval``, never past the
call's deadline) until it is terminal, and ``tasks/result`` then gives the ``CallToolResult``.
A call that is cancelled or times out cancels its task on the server (``tasks/cancel``).

The SDK (mcp 2.x) defines these types but sends none of these requests, and it validates a
``tools/call`` response as a ``CallToolResult``, so the requests go through the connection's
JSON-RPC dispatcher directly (``send_raw_request``) and are validated here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import mcp.types as mt

from campaigns.basics import GlyphoxaError

__all__ = ["DEFAULT_POLL_MS", "RawRequester", "TaskFailed", "call_as_task"]

log = logging.getLogger(__name__)

#: Poll interval when the server suggests none.
DEFAULT_POLL_MS = 250
#: How long a finished task is kept on the server for us (we fetch it at once).
_TASK_TTL_MS = 60_000
_CANCEL_TIMEOUT_S = 2.0


class TaskFailed(GlyphoxaError):
    """The server ended the task without a result (``cancelled``, or ``failed`` with none)."""


class RawRequester(Protocol):
    """The part of the SDK's ``JSONRPCDispatcher`` used here."""

    async def send_raw_request(
        self, method: str, params: Any, opts: Any = None
    ) -> dict[str, Any]: ...


async def call_as_task(
    dispatcher: RawRequester,
    name: str,
    arguments: dict[str, Any],
    *,
    spawn: Callable[[Coroutine[Any, Any, Any]], object],
    meta: dict[str, Any] | None = None,
) -> mt.CallToolResult:
    """Run ``name`` as a task and return its result; the caller bounds the time.

    Args:
        dispatcher: The live connection's JSON-RPC dispatcher.
        spawn: Runs a coroutine in a task the connection owns (the courtesy ``tasks/cancel``
            must outlive this call's cancellation).
    """
    params: dict[str, Any] = {"name": name, "arguments": arguments, "task": {"ttl": _TASK_TTL_MS}}
    if meta:
        params["_meta"] = meta
    raw = await dispatcher.send_raw_request("tools/call", params)
    task = mt.CreateTaskResult.model_validate(raw, by_name=False).task
    finished = False
    try:
        while task.status in ("working", "input_required"):
            # input_required: we have no user to ask; the server falls back or fails the task.
            await asyncio.sleep((task.poll_interval or DEFAULT_POLL_MS) / 1000.0)
            reply = await dispatcher.send_raw_request("tasks/get", {"taskId": task.task_id})
            task = mt.GetTaskResult.model_validate(reply, by_name=False)
            log.debug("task %s of %s: %s %s", task.task_id, name, task.status, task.status_message)
        finished = True
    finally:
        if not finished:
            spawn(_cancel(dispatcher, task.task_id))
    if task.status == "cancelled":
        raise TaskFailed(f"task {task.task_id} of {name} was cancelled by the server")
    payload = await dispatcher.send_raw_request("tasks/result", {"taskId": task.task_id})
    result = mt.CallToolResult.model_validate(payload, by_name=False)
    if task.status == "failed" and not result.is_error:
        detail = task.status_message or "no reason given"
        raise TaskFailed(f"task {task.task_id} of {name} failed: {detail}")
    return result


async def _cancel(dispatcher: RawRequester, task_id: str) -> None:
    """Best effort: a server that already finished or forgot the task is fine too."""
    try:
        async with asyncio.timeout(_CANCEL_TIMEOUT_S):
            await dispatcher.send_raw_request("tasks/cancel", {"taskId": task_id})
    except Exception as error:  # the call is over either way
        log.debug("tasks/cancel %s: %s", task_id, error)
