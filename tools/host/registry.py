"""Registry of every tool the host knows: provider-safe names, collisions, tiers, views.

Names are rebuilt from scratch whenever a server's tool list changes, always in the same
order (built-ins first, then MCP servers in config order), so a name never depends on which
server happened to connect first. A clash keeps the first owner's name and renames the later
tool to ``<server>_<tool>``; an explicit ``expose_as`` wins over any derived name.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tools.host.calibration import Calibration, ToolStats
from tools.host.latency import clean_input_schema, parse_latency, tier_for
from tools.host.types import ToolInfo
from tools.spec import LatencyMeta, ToolDef, ToolHandler
from tools.tiers import Tier

__all__ = [
    "MAX_NAME_LENGTH",
    "NameCollision",
    "Registry",
    "ServerTools",
    "ToolEntry",
    "ToolSpecLite",
    "safe_name",
]

log = logging.getLogger(__name__)

#: Longest tool name providers accept (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``).
MAX_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: Distinct (whitelist, tier, format) views kept before the cache starts over.
_VIEW_CACHE_LIMIT = 256


def safe_name(name: str) -> str:
    """``name`` made provider-safe: other characters become ``_``; an over-long name is cut and
    given a short hash so two long names sharing a prefix stay distinct."""
    cleaned = _UNSAFE.sub("_", name) or "tool"
    if len(cleaned) <= MAX_NAME_LENGTH:
        return cleaned
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME_LENGTH - 9]}_{digest}"


@dataclass(frozen=True, slots=True)
class ToolSpecLite:
    """One tool as a server offers it, before naming and tiering."""

    original: str
    description: str
    input_schema: dict[str, Any]
    latency: LatencyMeta
    handler: ToolHandler | None = None

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
    def from_mcp(cls, tool: Any, server: str) -> ToolSpecLite:
        """From an ``mcp.types.Tool`` as listed by the server."""
        read_only = tool.annotations.read_only_hint if tool.annotations is not None else None
        return cls(
            original=tool.name,
            description=tool.description or "",
            input_schema=clean_input_schema(tool.input_schema),
            latency=parse_latency(
                tool.meta, tool.input_schema, read_only_hint=read_only, tool=f"{server}/{tool.name}"
            ),
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


@dataclass(frozen=True, slots=True)
class NameCollision:
    """Two tools wanted one name; ``renamed`` is what the later one is exposed as."""

    name: str
    kept: str
    moved: str
    renamed: str

    def describe(self) -> str:
        return (
            f"{self.moved} wanted {self.name!r} (taken by {self.kept}); exposed as {self.renamed!r}"
        )


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
            stats=self.stats,
        )


class Registry:
    """Exposed name -> entry, rebuilt from the servers' offers."""

    def __init__(self, calibration: Calibration, ceilings: Mapping[Tier, int]) -> None:
        self.calibration = calibration
        self.ceilings = dict(ceilings)
        self.entries: dict[str, ToolEntry] = {}
        self.ordered: list[ToolEntry] = []
        self.collisions: list[NameCollision] = []
        self._views: dict[tuple[Any, Tier, bool], list[Any]] = {}

    def rebuild(self, servers: Sequence[ServerTools]) -> None:
        """Assign names deterministically and keep validators of unchanged tools."""
        previous = {(e.server, e.original): e for e in self.entries.values()}
        names, collisions = _assign_names(servers)
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
            )
            old = previous.get((server.server, spec.original))
            if old is not None and old.input_schema == spec.input_schema:
                entry.validator = old.validator
            entry.retier(self.ceilings)
            entries[name] = entry
        new_collisions = [c for c in collisions if c not in self.collisions]
        for collision in new_collisions:
            log.warning("tool name collision: %s", collision.describe())
        self.collisions = collisions
        self.entries = entries
        self.reorder()

    def reorder(self) -> None:
        """Fastest first (by the p50 that decides the tier), then by name."""
        self.ordered = sorted(self.entries.values(), key=lambda e: (e.sort_key, e.name))
        self.clear_views()

    def view(self, whitelist: Iterable[str], tier: Tier, *, openai: bool) -> list[Any]:
        """Whitelisted, healthy, in-budget tools at or below ``tier``, fastest first, as
        ``ToolInfo`` or (``openai``) Chat Completions tools. Cached until the next reorder."""
        allowed = whitelist if isinstance(whitelist, tuple | frozenset) else tuple(whitelist)
        key = (allowed, tier, openai)
        cached = self._views.get(key)
        if cached is not None:
            return cached
        wanted = set(allowed)
        everything = "*" in wanted
        view: list[Any] = []
        for entry in self.ordered:
            if not (everything or entry.name in wanted):
                continue
            if entry.healthy and entry.within_budget and entry.tier <= tier:
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


def _assign_names(
    servers: Sequence[ServerTools],
) -> tuple[dict[tuple[str, str], str], list[NameCollision]]:
    """Exposed name per (server, original tool name), and the clashes renamed on the way."""
    taken: dict[str, str] = {}
    names: dict[tuple[str, str], str] = {}
    collisions: list[NameCollision] = []
    # Explicit names first, so an override always gets the name it asked for if free.
    for server, spec in _offers(servers):
        wanted = server.expose_as.get(spec.original)
        if wanted is None:
            continue
        name = safe_name(wanted)
        if name != wanted:
            log.warning(
                "expose_as %r of %s is not provider-safe; using %r", wanted, server.server, name
            )
        if name in taken:
            continue  # falls through to derived naming below
        taken[name] = f"{server.server}/{spec.original}"
        names[(server.server, spec.original)] = name
    for server, spec in _offers(servers):
        if (server.server, spec.original) in names:
            continue
        owner = f"{server.server}/{spec.original}"
        wanted = safe_name(server.expose_as.get(spec.original, spec.original))
        name = wanted
        if name in taken:
            name = safe_name(f"{server.server}_{spec.original}")
            suffix = 2
            while name in taken:
                name = safe_name(f"{server.server}_{spec.original}_{suffix}")
                suffix += 1
            collisions.append(NameCollision(wanted, taken[wanted], owner, name))
        taken[name] = owner
        names[(server.server, spec.original)] = name
    return names, collisions
