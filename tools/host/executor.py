"""Runs tool calls: permission re-check, schema validation, hard timeout, result shaping.

Nothing a tool does escapes as an exception: timeouts, crashes, server failures and refusals
all come back as ``ToolResult(is_error=True)`` the LLM can read. Only the caller's own
cancellation (barge-in) propagates, as it must.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

import mcp.types as mt

from tools.host.metrics import ToolMetrics
from tools.host.registry import Registry, ToolEntry
from tools.host.types import Invocation, ResultStatus, ToolResult
from tools.host.validation import compile_validator
from tools.spec import ToolError
from tools.tiers import Tier

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "Executor", "security_log"]

log = logging.getLogger(__name__)
#: Refused calls (not whitelisted, over the tier) are security events, logged apart.
security_log = logging.getLogger("glyphoxa.security")

#: Characters of a result handed to the LLM before it is cut with a visible marker.
DEFAULT_MAX_RESULT_CHARS = 8000
_CACHE_LIMIT = 512


class Executor:
    """Executes one call against the registry's current entries."""

    def __init__(
        self,
        registry: Registry,
        metrics: ToolMetrics,
        *,
        on_retier: Callable[[], None],
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self._registry = registry
        self._metrics = metrics
        self._on_retier = on_retier
        self.max_result_chars = max_result_chars
        self._cache: dict[tuple[str, str], tuple[float, ToolResult]] = {}
        self.recorded = 0
        self._abandoned: set[asyncio.Task[Any]] = set()
        """Calls recorded into calibration so far (autosave watches it)."""

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        whitelist: Collection[str],
        tier: Tier,
        npc: str,
        call_id: str,
    ) -> ToolResult:
        started = time.perf_counter()
        entry = self._registry.entries.get(name)
        if entry is None or not ("*" in whitelist or name in whitelist):
            reason = "unknown tool" if entry is None else "not in the NPC's whitelist"
            return self._refuse(name, entry, npc, tier, call_id, reason, started)
        if not entry.within_budget or entry.tier > tier:
            reason = f"tool tier {entry.tier.label} is over the turn's {tier.label} budget"
            return self._refuse(name, entry, npc, tier, call_id, reason, started)
        if not entry.healthy:
            text = f"tool {name} is temporarily unavailable (its server is down); try later"
            return self._finish(entry, npc, tier, call_id, "error", text, None, started)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as error:
                text = f"arguments for {name} are not valid JSON: {error}"
                return self._finish(entry, npc, tier, call_id, "invalid", text, None, started)
        if arguments is None:  # "null" from a model that meant "no arguments"
            arguments = {}
        if not isinstance(arguments, dict):
            text = f"arguments for {name} must be a JSON object"
            return self._finish(entry, npc, tier, call_id, "invalid", text, None, started)
        problem = self._validate(entry, arguments)
        if problem is not None:
            text = f"invalid arguments for {name}: {problem}"
            return self._finish(entry, npc, tier, call_id, "invalid", text, None, started)
        cache_key: tuple[str, str] | None = None
        if entry.latency.idempotent and entry.latency.cacheable_seconds > 0:
            cache_key = (name, json.dumps(arguments, sort_keys=True, default=str))
            hit = self._cache.get(cache_key)
            if hit is not None and hit[0] > time.monotonic():
                return self._cached(entry, hit[1], npc, tier, call_id, started)
        result = await self._dispatch(entry, arguments, npc, tier, call_id, started)
        if cache_key is not None and result.status == "ok":
            if len(self._cache) >= _CACHE_LIMIT:
                self._evict()
            self._cache[cache_key] = (time.monotonic() + entry.latency.cacheable_seconds, result)
        return result

    def accepts_no_arguments(self, entry: ToolEntry) -> bool:
        """Whether ``{}`` is valid input (a probe has no way to invent arguments)."""
        return self._validate(entry, {}) is None

    async def probe(self, entry: ToolEntry) -> ToolResult:
        """One calibration call with no arguments, past permissions and the cache.

        Only a successful probe is recorded: a synthetic call may lack what the live bot
        provides (a session, a voice channel), and that must not demote the tool.
        """
        started = time.perf_counter()
        result = await self._dispatch(entry, {}, "probe", Tier.DEEP, "probe", started, False)
        if result.status == "ok":
            self._record(entry, (time.perf_counter() - started) * 1000.0, True)
        return result

    def _validate(self, entry: ToolEntry, arguments: dict[str, Any]) -> str | None:
        validator = entry.validator
        if validator is None:
            validator = entry.validator = compile_validator(entry.input_schema, tool=entry.name)
        return validator(arguments)  # type: ignore[no-any-return]

    async def _dispatch(
        self,
        entry: ToolEntry,
        arguments: dict[str, Any],
        npc: str,
        tier: Tier,
        call_id: str,
        started: float,
        record: bool = True,
    ) -> ToolResult:
        status: ResultStatus = "ok"
        structured: Any = None
        # A ToolError is the tool answering correctly that its input was bad ("no table named
        # 'loot'"): the LLM reads it as an error, but it says nothing against the tool's health.
        healthy = False
        try:
            if entry.handler is not None:
                async with asyncio.timeout(entry.timeout_s):
                    value = await entry.handler(**arguments)
                text, structured = _from_value(value)
            else:
                raw = await self._mcp_call(entry, arguments)  # enforces the timeout itself
                text, structured = _from_mcp(raw)
                if raw.is_error:
                    status = "error"
        except TimeoutError:
            status, structured = "timeout", None
            text = f"tool {entry.name} timed out after {entry.timeout_s * 1000:.0f} ms"
        except ToolError as error:
            status, text, healthy = "error", str(error), True
        except Exception as error:  # a crash of the tool or its server is the LLM's to read
            status = "error"
            if entry.handler is not None:
                log.exception("built-in tool %s crashed", entry.name)
                text = f"tool {entry.name} crashed: {type(error).__name__}: {error}"
            else:
                log.warning("MCP tool %s failed: %s: %s", entry.name, type(error).__name__, error)
                entry.connection.report_failure(error)
                text = f"tool {entry.name} failed: {error or type(error).__name__}"
        if record:
            ok = healthy or status == "ok"
            self._record(entry, (time.perf_counter() - started) * 1000.0, ok)
        return self._finish(entry, npc, tier, call_id, status, text, structured, started)

    async def _mcp_call(self, entry: ToolEntry, arguments: dict[str, Any]) -> mt.CallToolResult:
        """Over HTTP the request runs in its own task, so the hard timeout never waits for the
        SDK's courtesy cancel (a POST, shielded for up to 5 s) to reach a hung server; the
        abandoned task finishes that in the background. Over stdio that cancel is one line into
        a pipe, so the call stays in the caller's task and saves the task hop."""
        connection = entry.connection
        if not connection.detach_calls:
            async with asyncio.timeout(entry.timeout_s):
                return await connection.call_tool(entry.original, arguments)  # type: ignore[no-any-return]
        task = asyncio.create_task(
            entry.connection.call_tool(entry.original, arguments), name=f"mcp-call:{entry.name}"
        )
        try:
            done, _ = await asyncio.wait({task}, timeout=entry.timeout_s)
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if not done:
            self._abandon(task)
            raise TimeoutError
        return task.result()

    def _abandon(self, task: asyncio.Task[Any]) -> None:
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(_forget(self._abandoned))

    async def drain(self) -> None:
        """Cancel calls still winding down (host close)."""
        for task in list(self._abandoned):
            task.cancel()
        await asyncio.gather(*self._abandoned, return_exceptions=True)

    def _record(self, entry: ToolEntry, duration_ms: float, ok: bool) -> None:
        entry.stats.record(duration_ms, ok)
        self.recorded += 1
        if entry.retier(self._registry.ceilings):
            log.info("tool %s now %s (demoted=%s)", entry.name, entry.tier.label, entry.demoted)
            self._on_retier()

    def _finish(
        self,
        entry: ToolEntry,
        npc: str,
        tier: Tier,
        call_id: str,
        status: ResultStatus,
        text: str,
        structured: Any,
        started: float,
    ) -> ToolResult:
        limit = self.max_result_chars
        if len(text) > limit:
            text = f"{text[:limit]}\n[truncated {len(text) - limit} chars]"
            structured = None  # the full structure would bypass the cap
        duration_ms = (time.perf_counter() - started) * 1000.0
        result = ToolResult(
            call_id=call_id,
            name=entry.name,
            content=text,
            structured=structured,
            is_error=status != "ok",
            status=status,
            duration_ms=duration_ms,
        )
        self._metrics.observe(
            Invocation(npc, entry.name, entry.server, tier, status, duration_ms, call_id)
        )
        return result

    def _cached(
        self, entry: ToolEntry, hit: ToolResult, npc: str, tier: Tier, call_id: str, started: float
    ) -> ToolResult:
        duration_ms = (time.perf_counter() - started) * 1000.0
        self._metrics.observe(
            Invocation(npc, entry.name, entry.server, tier, "ok", duration_ms, call_id, cached=True)
        )
        return dataclasses.replace(hit, call_id=call_id, duration_ms=duration_ms, cached=True)

    def _refuse(
        self,
        name: str,
        entry: ToolEntry | None,
        npc: str,
        tier: Tier,
        call_id: str,
        reason: str,
        started: float,
    ) -> ToolResult:
        security_log.warning(
            "refused tool call: npc=%s tool=%s tier=%s reason=%s", npc, name, tier.label, reason
        )
        duration_ms = (time.perf_counter() - started) * 1000.0
        server = entry.server if entry is not None else "?"
        self._metrics.observe(Invocation(npc, name, server, tier, "refused", duration_ms, call_id))
        return ToolResult(
            call_id=call_id,
            name=name,
            content=f"tool {name} is not available to you right now",
            is_error=True,
            status="refused",
            duration_ms=duration_ms,
        )

    def _evict(self) -> None:
        now = time.monotonic()
        for key in [k for k, (expiry, _) in self._cache.items() if expiry <= now]:
            del self._cache[key]
        while len(self._cache) >= _CACHE_LIMIT:
            del self._cache[next(iter(self._cache))]


def _forget(tasks: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a late failure of an abandoned call is expected

    return done


def _from_value(value: Any) -> tuple[str, Any]:
    """Text and structure of a built-in handler's return value."""
    if isinstance(value, str):
        return value, None
    if value is None:
        return "done", None
    return json.dumps(value, ensure_ascii=False, default=str), value


def _from_mcp(result: mt.CallToolResult) -> tuple[str, Any]:
    """Structured content if the server sent it, else the text blocks joined."""
    if result.structured_content is not None:
        structured = result.structured_content
        return json.dumps(structured, ensure_ascii=False, default=str), structured
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        else:
            kind = getattr(block, "type", "content")
            label = getattr(block, "mime_type", None) or getattr(block, "uri", None) or ""
            parts.append(f"[{kind} {label}]".replace(" ]", "]"))
    return "\n".join(parts), None
