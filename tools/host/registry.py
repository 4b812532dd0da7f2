"""Registry of every tool the host knows: names, tiers, health and the views NPCs get.

Rebuilt from the servers' offers whenever one changes. Names come from ``tools.host.naming``
(configuration order and ``expose_as``, fixed for the session); tiers from declared or
measured latency (``ToolEntry.retier``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from campaigns.basics import Tier
from tools.host.calibration import Calibration, ToolStats
from tools.host.latency import clean_input_schema, parse_latency, tier_for
from tools.host.naming import MAX_NAME_LENGTH, NameCollision, NameLedger, Offer, safe_name
from tools.host.types import ToolInfo
from tools.selection import selection_for
from tools.spec import LatencyMeta, ToolDef, ToolHandler

__all__ = [
    "MAX_NAME_LENGTH",
    "NameCollision",
    "Registry",
    "ServerTools",
    "TaskSupport",
    "ToolEntry",
    "ToolSpecLite",
    "safe_name",
]

log = logging.getLogger(__name__)

#: Distinct (whitelist, tier, format) views kept before the cache starts over.
_VIEW_CACHE_LIMIT = 256

TaskSupport = Literal["forbidden", "optional", "required"]


@dataclass(frozen=True, slots=True)
class ToolSpecLite:
    """One tool as a server offers it, before naming and tiering."""

    original: str
    description: str
    input_schema: dict[str, Any]
    latency: LatencyMeta
    handler: ToolHandler | None = None
    task_support: TaskSupport = "forbidden"

    @classmethod
    def from_builtin(cls, tool: ToolDef) -> ToolSpecLite:
        """From a built-in server's tool definition (called in-process through its handler)."""
        return cls(
            original=tool.name,
            description=tool.description,
            input_schema=clean_input_schema(tool.input_schema),
            latency=tool.latency,
            handler=tool.handler,
        )

    @classmethod
    def from_mcp(
        cls, tool: Any, server: str, cacheable_seconds: Mapping[str, float] | None = None
    ) -> ToolSpecLite:
        """From an ``mcp.types.Tool`` as listed by the server.

        ``cacheable_seconds`` (server config, by tool name or ``*``) lets an idempotent,
        read-only third-party tool be cached even though it declares no Glyphoxa metadata.
        """
        hints = tool.annotations
        latency = parse_latency(
            tool.meta,
            tool.input_schema,
            read_only_hint=hints.read_only_hint if hints is not None else None,
            idempotent_hint=hints.idempotent_hint if hints is not None else None,
            tool=f"{server}/{tool.name}",
        )
        configured = (cacheable_seconds or {}).get(tool.name, (cacheable_seconds or {}).get("*"))
        if configured is not None and latency.idempotent and latency.read_only:
            latency = dataclasses.replace(latency, cacheable_seconds=float(configured))
        execution = tool.execution
        task_support = execution.task_support if execution is not None else None
        return cls(
            original=tool.name,
            description=tool.description or "",
            input_schema=clean_input_schema(tool.input_schema),
            latency=latency,
            task_support=task_support or "forbidden",
        )


@dataclass(slots=True)
class ServerTools:
    """A server's current offer: its tools, health, naming overrides and default timeout."""

    server: str
    kind: Literal["builtin", "mcp"]
    tools: list[ToolSpecLite]
    healthy: bool = True
    expose_as: Mapping[str, str] = field(default_factory=dict)
    default_timeout_s: float = 4.0
    connection: Any = None
    tasks: bool = False
    """The server accepts task-augmented ``tools/call`` (tasks capability)."""


@dataclass(slots=True)
class ToolEntry:
    """Everything the executor needs about one exposed tool."""

    name: str
    server: str
    original: str
    description: str
    input_schema: dict[str, Any]
    latency: LatencyMeta
    kind: Literal["builtin", "mcp"]
    timeout_s: float
    stats: ToolStats
    healthy: bool
    handler: ToolHandler | None = None
    connection: Any = None
    validator: Any = None
    tier: Tier = Tier.DEEP
    within_budget: bool = True
    demoted: bool = False
    sort_key: float = 0.0
    task_support: TaskSupport = "forbidden"
    needs_tasks: bool = False
    info: ToolInfo | None = None

    @property
    def key(self) -> str:
        """Calibration key; stable across renames."""
        return f"{self.server}/{self.original}"

    def retier(self, ceilings: Mapping[Tier, int]) -> bool:
        """Recompute tier from declared/measured latency and error rate; True if it changed."""
        stats = self.stats
        p50 = stats.p50_ms if stats.trusted else self.latency.estimated_duration_ms
        base = tier_for(p50, ceilings)
        demoted = stats.failing
        if demoted and base is not None:
            base = Tier(base + 1) if base < Tier.DEEP else None
        tier = base if base is not None else Tier.DEEP
        within = base is not None
        changed = (tier, within, demoted) != (self.tier, self.within_budget, self.demoted)
        self.tier, self.within_budget, self.demoted = tier, within, demoted
        self.sort_key = p50 if p50 is not None else float(ceilings[Tier.DEEP])
        if changed or self.info is None:
            self.info = self._make_info()
        return changed

    def set_healthy(self, healthy: bool) -> None:
        self.healthy = healthy
        self.info = self._make_info()

    def _make_info(self) -> ToolInfo:
        return ToolInfo(
            name=self.name,
            server=self.server,
            description=self.description,
            input_schema=self.input_schema,
            latency=self.latency,
            tier=self.tier,
            healthy=self.healthy,
            original_name=self.original,
            kind=self.kind,
            within_budget=self.within_budget,
            demoted=self.demoted,
            timeout_ms=self.timeout_s * 1000.0,
            task_support=self.task_support,
            needs_tasks=self.needs_tasks,
            stats=self.stats,
        )


class Registry:
    """Exposed name -> entry, rebuilt from the servers' offers."""

    def __init__(self, calibration: Calibration, ceilings: Mapping[Tier, int]) -> None:
        self.calibration = calibration
        self.ceilings = dict(ceilings)
        self.entries: dict[str, ToolEntry] = {}
        self.ordered: list[ToolEntry] = []
        self.names = NameLedger()
        self._views: dict[tuple[Any, Tier, bool], list[Any]] = {}
        self._granted: dict[Any, frozenset[str]] = {}
        """Exposed names each whitelist grants; kept until the tools change (``rebuild``)."""

    @property
    def collisions(self) -> list[NameCollision]:
        """Every name collision of the session, each reported once."""
        return self.names.collisions

    def rebuild(self, servers: Sequence[ServerTools]) -> None:
        """Name every offer (``NameLedger``) and keep validators of unchanged tools."""
        previous = {(e.server, e.original): e for e in self.entries.values()}
        names = self.names.assign(
            [
                Offer(server.server, spec.original, server.expose_as.get(spec.original))
                for server, spec in _offers(servers)
            ]
        )
        entries: dict[str, ToolEntry] = {}
        for server, spec in _offers(servers):
            name = names[(server.server, spec.original)]
            entry = ToolEntry(
                name=name,
                server=server.server,
                original=spec.original,
                description=spec.description,
                input_schema=spec.input_schema,
                latency=spec.latency,
                kind=server.kind,
                timeout_s=_timeout_s(spec.latency, server.default_timeout_s),
                stats=self.calibration.stats(f"{server.server}/{spec.original}"),
                healthy=server.healthy,
                handler=spec.handler,
                connection=server.connection,
                task_support=spec.task_support,
                needs_tasks=spec.task_support == "required" and not server.tasks,
            )
            old = previous.get((server.server, spec.original))
            if old is not None and old.input_schema == spec.input_schema:
                entry.validator = old.validator
            entry.retier(self.ceilings)
            entries[name] = entry
        self.entries = entries
        self._granted.clear()
        self.reorder()

    def reorder(self) -> None:
        """Fastest first (by the p50 that decides the tier), then by name."""
        self.ordered = sorted(self.entries.values(), key=lambda e: (e.sort_key, e.name))
        self.clear_views()

    def view(self, whitelist: Iterable[str], tier: Tier, *, openai: bool) -> list[Any]:
        """Whitelisted, healthy, in-budget tools at or below ``tier``, fastest first, as
        ``ToolInfo`` or (``openai``) Chat Completions tools. Cached until the next reorder.

        ``whitelist`` holds an NPC's ``tools:`` entries in any documented form
        (``tools.selection``: ``*``, ``<server>.*``, ``<server>__<tool>``, exposed names)."""
        allowed = whitelist if isinstance(whitelist, tuple | frozenset) else tuple(whitelist)
        key = (allowed, tier, openai)
        cached = self._views.get(key)
        if cached is not None:
            return cached
        granted = self._granted.get(allowed)
        if granted is None:  # which tools a list grants changes only when the tools do
            selection = selection_for(allowed)
            granted = frozenset(
                e.name for e in self.ordered if selection.allows(e.server, e.original, e.name)
            )
            if len(self._granted) >= _VIEW_CACHE_LIMIT:
                self._granted.clear()
            self._granted[allowed] = granted
        view: list[Any] = []
        for entry in self.ordered:
            if entry.name not in granted:
                continue
            # Inlined ``offerable``: this loop runs over every tool after each registry change.
            if (
                entry.healthy
                and entry.within_budget
                and entry.tier <= tier
                and not entry.needs_tasks
            ):
                view.append(entry.info.as_openai() if openai else entry.info)  # type: ignore[union-attr]
        if len(self._views) >= _VIEW_CACHE_LIMIT:
            self._views.clear()
        self._views[key] = view
        return view

    def clear_views(self) -> None:
        """Forget cached views (done by every rebuild and reorder)."""
        self._views.clear()


def _timeout_s(latency: LatencyMeta, default_s: float) -> float:
    """Declared max is the hard timeout; a tool without one gets its server's default."""
    if latency.max_duration_ms is not None and latency.max_duration_ms > 0:
        return latency.max_duration_ms / 1000.0
    return default_s


def _offers(servers: Sequence[ServerTools]) -> Iterator[tuple[ServerTools, ToolSpecLite]]:
    """Every tool of every server, in server order: the order names are handed out in."""
    for server in servers:
        for spec in server.tools:
            yield server, spec
