"""The tools a configuration offers, known without starting anything: for ``glyphoxa check``
and for choosing which built-in servers a table starts.

Built-in servers and their tools are fixed (``tools.builtin.SERVER_TOOLS``); an MCP server's
tools are known from what it listed the last time it was up (``known_tools.json`` beside the
calibration file) plus its ``expose_as`` names. Exposed names are handed out by the very
``NameLedger`` the running host uses, and every ``tools:`` entry is read by
``tools.selection``, so what ``check`` accepts is what the LLM is offered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from campaigns.suggest import rank_choices
from tools.host.naming import NameLedger, Offer
from tools.selection import ToolPattern, ToolSelection, parse_pattern

if TYPE_CHECKING:
    from tools.config import McpServerConfig

__all__ = ["CatalogServer", "CatalogTool", "Resolution", "ToolCatalog"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CatalogTool:
    """One tool: its server, its own name and the name the LLM sees."""

    server: str
    original: str
    exposed: str


@dataclass(frozen=True, slots=True)
class CatalogServer:
    """A tool server as configured; ``tools`` is None for an MCP server never seen up."""

    name: str
    builtin: bool
    tools: tuple[str, ...] | None
    enabled: bool = True


@dataclass(slots=True)
class Resolution:
    """What one ``tools:`` entry grants, and what to tell the DM about it."""

    pattern: ToolPattern
    tools: list[CatalogTool] = field(default_factory=list)
    error: str | None = None
    warning: str | None = None


class ToolCatalog:
    """Servers and exposed tool names of a configuration."""

    def __init__(
        self, servers: Sequence[CatalogServer], expose_as: Mapping[str, Mapping[str, str]]
    ):
        self.servers = {server.name: server for server in servers}
        offers: list[Offer] = []
        for server in servers:
            renames = expose_as.get(server.name, {})
            names = list(server.tools or ())
            names += [original for original in renames if original not in names]
            offers += [Offer(server.name, name, renames.get(name)) for name in names]
        exposed = NameLedger().assign(offers)
        self.tools = [
            CatalogTool(offer.server, offer.original, exposed[(offer.server, offer.original)])
            for offer in offers
        ]

    @classmethod
    def from_config(
        cls,
        mcp_servers: Iterable[McpServerConfig] = (),
        *,
        known_tools_path: Path | None = None,
        builtin: Mapping[str, Sequence[str]] | None = None,
    ) -> ToolCatalog:
        """The built-in servers, then the MCP servers in configuration order (the order the
        host names tools in). ``known_tools_path``: the host's ``known_tools.json``."""
        if builtin is None:
            from tools.builtin import SERVER_TOOLS

            builtin = SERVER_TOOLS
        servers = [CatalogServer(name, True, tuple(tools)) for name, tools in builtin.items()]
        listings = _known_listings(known_tools_path)
        expose_as: dict[str, Mapping[str, str]] = {}
        for config in mcp_servers:
            listing = listings.get(config.name)
            servers.append(CatalogServer(config.name, False, listing, config.enabled))
            expose_as[config.name] = config.expose_as
        return cls(servers, expose_as)

    def granted(self, whitelist: Iterable[str]) -> list[CatalogTool]:
        """Every known tool the whitelist grants, in naming order."""
        selection = ToolSelection(whitelist)
        return [t for t in self.tools if selection.allows(t.server, t.original, t.exposed)]

    def builtin_servers_for(self, whitelists: Iterable[Iterable[str]]) -> list[str]:
        """Built-in servers some whitelist grants a tool of, in their fixed order."""
        needed: set[str] = set()
        for whitelist in whitelists:
            needed.update(tool.server for tool in self.granted(whitelist))
        return [name for name, server in self.servers.items() if server.builtin and name in needed]

    def resolve(self, entry: str) -> Resolution:
        """What ``entry`` grants; ``error`` when it can grant nothing, ``warning`` when it grants
        nothing today for a reason the DM may not know (a disabled server), or cannot be
        verified before the server has been seen."""
        pattern = parse_pattern(entry)
        result = Resolution(pattern, self.granted([entry]))
        if pattern.kind == "invalid":
            result.error = f"'{entry}' is not a tool name ({pattern.problem})"
            result.error += self._suggest(entry.strip(" .*") or entry)
            return result
        if pattern.kind == "all":
            return result
        if result.tools:
            disabled = sorted({t.server for t in result.tools if not self._enabled(t.server)})
            if disabled and all(not self._enabled(t.server) for t in result.tools):
                result.warning = self._disabled(entry, disabled)
            return result
        server = self.servers.get(pattern.server or "")
        if server is not None and server.tools is None:  # an MCP server never seen up
            if not server.enabled:
                result.warning = self._disabled(entry, [server.name])
            return result
        unseen = [s.name for s in self.servers.values() if s.tools is None and s.enabled]
        if pattern.kind == "name" and unseen and self._suggest(entry):
            result.error = (
                f"unknown tool '{entry}'{self._suggest(entry)} (if it is a tool of MCP server "
                f"'{unseen[0]}', which check has not seen up yet, write {unseen[0]}__{entry})"
            )
            return result
        if pattern.kind == "name" and unseen:
            result.warning = (
                f"'{entry}' is no built-in tool or expose_as name, and check cannot tell "
                f"whether MCP server {_names(unseen)} offers it: it has not been seen up yet "
                "(run `glyphoxa tools list` once while it is up, or write "
                f"{unseen[0]}__{entry})"
            )
            return result
        result.error = self._unknown(pattern)
        return result

    def _enabled(self, server: str) -> bool:
        found = self.servers.get(server)
        return found is None or found.enabled

    def _disabled(self, entry: str, servers: list[str]) -> str:
        return (
            f"'{entry}' grants nothing while MCP server {_names(servers)} is disabled "
            "(enabled: false in glyphoxa.yaml)"
        )

    def _unknown(self, pattern: ToolPattern) -> str:
        entry = pattern.text
        if pattern.kind == "server":
            return f"no tool server named '{pattern.server}'" + self._suggest(entry)
        if pattern.kind == "qualified" and pattern.server not in self.servers:
            return (
                f"'{entry}' names no configured tool server ('{pattern.server}')"
                + self._suggest(entry)
            )
        if pattern.kind == "qualified":
            own = [f"{t.server}__{t.original}" for t in self.tools if t.server == pattern.server]
            return f"server '{pattern.server}' has no tool '{pattern.tool}'" + self._suggest(
                entry, own
            )
        return f"unknown tool '{entry}'" + self._suggest(entry)

    def _suggest(self, entry: str, choices: list[str] | None = None) -> str:
        """The best fix among ``choices`` (default: every form that would grant something)."""
        if choices is None:
            choices = [t.exposed for t in self.tools]
            choices += [f"{name}.*" for name in self.servers]
            if "__" in entry:
                choices += [f"{t.server}__{t.original}" for t in self.tools]
        ranked = [entry] if entry in choices else rank_choices(entry, choices, limit=1)
        return f"; did you mean '{ranked[0]}'?" if ranked else ""


def _names(servers: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in servers)


def _known_listings(path: Path | None) -> dict[str, tuple[str, ...]]:
    """Tool names each MCP server listed last time (empty without the file)."""
    if path is None or not path.is_file():
        return {}
    from tools.host.known_tools import KnownTools

    known = KnownTools(path)
    return {server: tuple(t.name for t in known.get(server)) for server in known.servers()}
