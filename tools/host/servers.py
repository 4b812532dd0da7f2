"""The configured MCP servers: one connection each, what they offer, what they offered last.

``ToolHost`` keeps built-ins, the registry and execution; this keeps the MCP side: opening,
adding, removing and restarting connections, remembering each listing (``KnownTools``) and
turning the servers into the offers the registry names (a server that is down offers what it
listed last time, so names do not depend on who is up).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any

from campaigns.basics import GlyphoxaError
from tools.config import McpConfig, McpServerConfig
from tools.host.connections import McpConnection, RestartPolicy, ServerState
from tools.host.known_tools import KnownTools
from tools.host.registry import ServerTools, ToolSpecLite

__all__ = ["McpServers"]

log = logging.getLogger(__name__)


class McpServers:
    """Connections by server name, in configuration order."""

    def __init__(
        self,
        config: McpConfig,
        *,
        policy: RestartPolicy,
        known_tools: KnownTools,
        on_change: Callable[[McpConnection], None],
    ) -> None:
        self.config = config
        self.known_tools = known_tools
        self.connections: dict[str, McpConnection] = {}
        self._policy = policy
        self._on_change = on_change

    async def start(self) -> None:
        """Connect every enabled server in parallel; return when each had its first attempt
        (bounded by its ``connect_timeout_s``)."""
        servers = [s for s in self.config.servers if s.enabled]
        for server in servers:
            self._open(server)
        await asyncio.gather(
            *(self.connections[s.name].wait_attempted(s.connect_timeout_s) for s in servers)
        )

    async def stop(self) -> None:
        connections = list(self.connections.values())
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    async def add(self, config: McpServerConfig, taken: Collection[str]) -> McpConnection:
        """Open a new server at runtime; ``taken`` are names already used by built-ins."""
        if config.name in self.connections or config.name in taken:
            raise GlyphoxaError(f"a tool server named {config.name!r} already exists")
        self.config = McpConfig(servers=[*self.config.servers, config])
        return self._open(config)

    async def remove(self, name: str) -> None:
        connection = self.connections.pop(name, None)
        if connection is None:
            raise GlyphoxaError(f"no MCP server named {name!r}")
        await connection.stop()
        self.config = McpConfig(servers=[s for s in self.config.servers if s.name != name])

    async def restart(self, name: str) -> None:
        connection = self.get(name)
        await connection.stop()
        self._open(connection.config)

    def get(self, name: str) -> McpConnection:
        connection = self.connections.get(name)
        if connection is None:
            raise GlyphoxaError(f"no MCP server named {name!r}")
        return connection

    def is_current(self, connection: McpConnection) -> bool:
        """False for a connection replaced by a restart or removed."""
        return self.connections.get(connection.name) is connection

    def states(self) -> dict[str, dict[str, Any]]:
        return {
            name: {"state": c.state.value, "restarts": c.restarts, "last_error": c.last_error}
            for name, c in self.connections.items()
        }

    def offers(self) -> list[ServerTools]:
        """Every server's tools in configuration order, for ``Registry.rebuild``."""
        servers: list[ServerTools] = []
        for config in self.config.servers:
            connection = self.connections.get(config.name)
            if connection is None:
                continue
            # A server that is down takes part with what it offered last time (names stay put).
            listing = connection.tools or self.known_tools.get(config.name)
            cache = config.cacheable_seconds
            servers.append(
                ServerTools(
                    config.name,
                    "mcp",
                    [ToolSpecLite.from_mcp(tool, config.name, cache) for tool in listing],
                    healthy=connection.state is ServerState.UP,
                    expose_as=config.expose_as,
                    default_timeout_s=config.call_timeout_s,
                    connection=connection,
                    tasks=connection.tasks,
                )
            )
        return servers

    def unknown_hint(self, name: str) -> str | None:
        """For a name no tool has: the servers that are down and have never listed tools."""
        unseen = [
            f"MCP server {c.name!r} is {c.describe_down()}"
            for c in self.connections.values()
            if c.state is not ServerState.UP and not c.tools and not self.known_tools.get(c.name)
        ]
        return "; ".join(unseen) + " (it may offer it); try later" if unseen else None

    def _open(self, config: McpServerConfig) -> McpConnection:
        connection = McpConnection(config, on_change=self._changed, policy=self._policy)
        self.connections[config.name] = connection
        connection.start()
        return connection

    def _changed(self, connection: McpConnection) -> None:
        if not self.is_current(connection):
            return
        if connection.state is ServerState.UP:
            self.known_tools.remember(connection.name, connection.tools)
        self._on_change(connection)
