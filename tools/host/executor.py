"""Runs tool calls: permission re-check, schema validation, cache, DM approval, result shaping.

Nothing a tool does escapes as an exception: timeouts, crashes, server failures, refusals and
the DM's "no" all come back as ``ToolResult(is_error=True)`` the LLM can read. Only the
caller's own cancellation (barge-in) propagates, as it must. Running a call on its server and
judging its outcome is ``tools.host.dispatch``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from campaigns.basics import Tier
from tools.caller import ToolCaller, calling_as
from tools.host.approval import ApprovalDecision, ApprovalGate, ApprovalRequest
from tools.host.content import ShapedResult
from tools.host.dispatch import run_entry
from tools.host.metrics import ToolMetrics
from tools.host.registry import Registry, ToolEntry
from tools.host.types import Invocation, ResultStatus, ToolResult
from tools.host.validation import compile_validator
from tools.selection import selection_for

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "Executor", "security_log"]

log = logging.getLogger(__name__)
#: Refused calls (not whitelisted, over the tier) are security events, logged apart.
security_log = logging.getLogger("glyphoxa.security")

#: Characters of a result handed to the LLM before it is cut with a visible marker.
DEFAULT_MAX_RESULT_CHARS = 8000
_CACHE_LIMIT = 512

#: Says why a name is unknown (e.g. "MCP server 'lore' is down, it may offer it").
UnknownHint = Callable[[str], str | None]


class Executor:
    """Executes one call against the registry's current entries."""

    def __init__(
        self,
        registry: Registry,
        metrics: ToolMetrics,
        *,
        on_retier: Callable[[], None],
        approvals: ApprovalGate | None = None,
        unknown_hint: UnknownHint | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self._registry = registry
        self._metrics = metrics
        self._on_retier = on_retier
        self.approvals = approvals or ApprovalGate()
        self._unknown_hint = unknown_hint or (lambda _name: None)
        self.max_result_chars = max_result_chars
        self._cache: dict[tuple[str, str], tuple[float, ToolResult]] = {}
        self.recorded = 0
        """Calls recorded into calibration so far (autosave watches it)."""
        self._abandoned: set[asyncio.Task[Any]] = set()
        self.session_of: Callable[[], str | None] = lambda: None
        """The campaign-memory session calls are made in (told to tools with the caller)."""

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
        if entry is None or not selection_for(whitelist).allows(entry.server, entry.original, name):
            reason = "unknown tool" if entry is None else "not in the NPC's whitelist"
            hint = self._unknown_hint(name) if entry is None else None
            return self._refuse(name, entry, npc, tier, call_id, reason, started, hint)
        if not entry.within_budget or entry.tier > tier:
            reason = f"tool tier {entry.tier.label} is over the turn's {tier.label} budget"
            return self._refuse(name, entry, npc, tier, call_id, reason, started)
        if not entry.healthy:
            down = entry.connection.describe_down() if entry.connection is not None else "down"
            text = f"tool {name} is unavailable: MCP server {entry.server!r} is {down}; try later"
            return self._finish(entry, npc, tier, call_id, "error", ShapedResult(text), started)
        if entry.needs_tasks:
            text = f"tool {name} needs MCP tasks, which server {entry.server!r} does not offer"
            return self._finish(entry, npc, tier, call_id, "error", ShapedResult(text), started)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as error:
                text = f"arguments for {name} are not valid JSON: {error}"
                return self._invalid(entry, npc, tier, call_id, text, started)
        if arguments is None:  # "null" from a model that meant "no arguments"
            arguments = {}
        if not isinstance(arguments, dict):
            text = f"arguments for {name} must be a JSON object"
            return self._invalid(entry, npc, tier, call_id, text, started)
        problem = self._validate(entry, arguments)
        if problem is not None:
            text = f"invalid arguments for {name}: {problem}"
            return self._invalid(entry, npc, tier, call_id, text, started)
        cache_key: tuple[str, str] | None = None
        if entry.latency.idempotent and entry.latency.cacheable_seconds > 0:
            cache_key = (name, json.dumps(arguments, sort_keys=True, default=str))
            hit = self._cache.get(cache_key)
            if hit is not None and hit[0] > time.monotonic():
                return self._cached(entry, hit[1], npc, tier, call_id, started)
        approval: str | None = None
        if self.approvals.needed(npc, name, entry.latency.read_only):
            decision = await self._ask(entry, arguments, npc, call_id)
            approval = decision.label()
            if not decision.approved:
                return self._denied(entry, npc, tier, call_id, decision, started)
            started = time.perf_counter()  # the DM's thinking time is not the tool's latency
        result = await self._dispatch(entry, arguments, npc, tier, call_id, started, approval)
        if cache_key is not None and result.status == "ok":
            if len(self._cache) >= _CACHE_LIMIT:
                self._evict()
            self._cache[cache_key] = (time.monotonic() + entry.latency.cacheable_seconds, result)
        return result

    def accepts_no_arguments(self, entry: ToolEntry) -> bool:
        """Whether ``{}`` is valid input (a probe has no way to invent arguments)."""
        return self._validate(entry, {}) is None

    async def probe(self, entry: ToolEntry) -> ToolResult:
        """One calibration call with no arguments, past permissions, approval and the cache.

        Only a successful probe is recorded: a synthetic call may lack what the live bot
        provides (a session, a voice channel), and that must not demote the tool.
        """
        started = time.perf_counter()
        outcome = await run_entry(entry, {}, self._abandon)
        if outcome.status == "ok":
            self._record(entry, (time.perf_counter() - started) * 1000.0, True)
        status, shaped = outcome.status, outcome.shaped
        return self._finish(entry, "probe", Tier.DEEP, "probe", status, shaped, started)

    def _validate(self, entry: ToolEntry, arguments: dict[str, Any]) -> str | None:
        validator = entry.validator
        if validator is None:
            validator = entry.validator = compile_validator(entry.input_schema, tool=entry.name)
        return validator(arguments)  # type: ignore[no-any-return]

    async def _ask(
        self, entry: ToolEntry, arguments: dict[str, Any], npc: str, call_id: str
    ) -> ApprovalDecision:
        request = ApprovalRequest(
            npc=npc,
            tool=entry.name,
            server=entry.server,
            arguments=arguments,
            call_id=call_id,
            read_only=entry.latency.read_only,
            timeout_s=self.approvals.campaign.timeout_s,
        )
        return await self.approvals.decide(request)

    async def _dispatch(
        self,
        entry: ToolEntry,
        arguments: dict[str, Any],
        npc: str,
        tier: Tier,
        call_id: str,
        started: float,
        approval: str | None,
    ) -> ToolResult:
        with calling_as(ToolCaller(npc, self.session_of())):
            outcome = await run_entry(entry, arguments, self._abandon)
        if outcome.health != "skip":
            duration_ms = (time.perf_counter() - started) * 1000.0
            self._record(entry, duration_ms, outcome.health == "ok")
        return self._finish(
            entry, npc, tier, call_id, outcome.status, outcome.shaped, started, approval
        )

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

    def _invalid(
        self, entry: ToolEntry, npc: str, tier: Tier, call_id: str, text: str, started: float
    ) -> ToolResult:
        return self._finish(entry, npc, tier, call_id, "invalid", ShapedResult(text), started)

    def _finish(
        self,
        entry: ToolEntry,
        npc: str,
        tier: Tier,
        call_id: str,
        status: ResultStatus,
        shaped: ShapedResult,
        started: float,
        approval: str | None = None,
    ) -> ToolResult:
        text, structured = shaped.text, shaped.structured
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
            attachments=shaped.attachments,
            approval=approval,
        )
        self._metrics.observe(
            Invocation(
                npc, entry.name, entry.server, tier, status, duration_ms, call_id, False, approval
            )
        )
        return result

    def _denied(
        self,
        entry: ToolEntry,
        npc: str,
        tier: Tier,
        call_id: str,
        decision: ApprovalDecision,
        started: float,
    ) -> ToolResult:
        reasons = {
            "denied": "the DM refused it",
            "timeout": "the DM did not answer in time",
            "unavailable": "no DM could be asked",
        }
        text = (
            f"{entry.name} was not run: {reasons.get(decision.outcome, decision.outcome)}. "
            "Do not call it again now; answer without it."
        )
        shaped = ShapedResult(text)
        return self._finish(entry, npc, tier, call_id, "refused", shaped, started, decision.label())

    def _cached(
        self, entry: ToolEntry, hit: ToolResult, npc: str, tier: Tier, call_id: str, started: float
    ) -> ToolResult:
        duration_ms = (time.perf_counter() - started) * 1000.0
        self._metrics.observe(
            Invocation(npc, entry.name, entry.server, tier, "ok", duration_ms, call_id, cached=True)
        )
        return dataclasses.replace(
            hit, call_id=call_id, duration_ms=duration_ms, cached=True, approval=None
        )

    def _refuse(
        self,
        name: str,
        entry: ToolEntry | None,
        npc: str,
        tier: Tier,
        call_id: str,
        reason: str,
        started: float,
        hint: str | None = None,
    ) -> ToolResult:
        security_log.warning(
            "refused tool call: npc=%s tool=%s tier=%s reason=%s", npc, name, tier.label, reason
        )
        duration_ms = (time.perf_counter() - started) * 1000.0
        server = entry.server if entry is not None else "?"
        self._metrics.observe(Invocation(npc, name, server, tier, "refused", duration_ms, call_id))
        content = f"tool {name} is not available to you right now"
        if hint:
            content = f"no tool named {name!r} is up: {hint}"
        return ToolResult(
            call_id=call_id,
            name=name,
            content=content,
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
