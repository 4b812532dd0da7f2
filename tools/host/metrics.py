"""Per-tool Prometheus metrics and the invocation log hook.

Metrics go to a registry passed in (the bot passes ``prometheus_client.REGISTRY`` to expose
them); by default each host gets its own, so several hosts in one process never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from tools.host.types import Invocation

__all__ = ["InvocationCallback", "ToolMetrics"]

log = logging.getLogger(__name__)

#: Receives every finished call; may be async (e.g. ``MemoryStore.log_tool_call``).
InvocationCallback = Callable[[Invocation], Awaitable[None] | None]

_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.5, 4.0, 8.0)


class ToolMetrics:
    """Counts calls by status, observes latency, and forwards each call to ``on_invocation``."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        on_invocation: InvocationCallback | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._calls = Counter(
            "glyphoxa_tool_calls",
            "Tool calls by tool and status",
            ["tool", "status"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "glyphoxa_tool_latency_seconds",
            "Tool call latency (host included)",
            ["tool"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self._counters: dict[tuple[str, str], Any] = {}
        self._histograms: dict[str, Any] = {}
        self._on_invocation = on_invocation
        self._queue: asyncio.Queue[Awaitable[None]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None

    def observe(self, invocation: Invocation) -> None:
        key = (invocation.tool, invocation.status)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = self._calls.labels(*key)
        counter.inc()
        histogram = self._histograms.get(invocation.tool)
        if histogram is None:
            histogram = self._histograms[invocation.tool] = self._latency.labels(invocation.tool)
        histogram.observe(invocation.duration_ms / 1000.0)
        if self._on_invocation is not None:
            self._notify(invocation)

    def _notify(self, invocation: Invocation) -> None:
        try:
            outcome = self._on_invocation(invocation)  # type: ignore[misc]
        except Exception:
            log.exception("on_invocation callback failed")
            return
        if inspect.isawaitable(outcome):
            # One writer task keeps the log in call order and off the caller's latency.
            self._queue.put_nowait(outcome)
            if self._writer is None or self._writer.done():
                self._writer = asyncio.create_task(self._write_log(), name="tool-invocation-log")

    async def _write_log(self) -> None:
        while True:
            outcome = await self._queue.get()
            try:
                await outcome
            except Exception as error:
                log.error("on_invocation callback failed: %s", error)
            finally:
                self._queue.task_done()

    def count(self, tool: str, status: str) -> float:
        """Calls of ``tool`` that ended with ``status`` (for tests and the CLI)."""
        value = self.registry.get_sample_value(
            "glyphoxa_tool_calls_total", {"tool": tool, "status": status}
        )
        return value or 0.0

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Let the invocation log catch up, then stop its writer (called on host close)."""
        if self._writer is None:
            return
        try:
            async with asyncio.timeout(timeout_s):
                await self._queue.join()
        except TimeoutError:
            log.warning("invocation log: %d entries not written", self._queue.qsize())
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer
        self._writer = None
        while not self._queue.empty():  # close never-run coroutines so they do not warn
            outcome = self._queue.get_nowait()
            if inspect.iscoroutine(outcome):
                outcome.close()
