"""Built-in tool servers: dice, rules, memory, files, session, ambience, images, web.

Each server is a ``BuiltinServer`` (``tools.spec``) whose tools are defined once: the tool host
calls the handlers in-process, and ``tools.builtin.serve.serve_stdio`` (``glyphoxa serve-tool
NAME``, or ``python -m tools.builtin NAME``) publishes the very same definitions over MCP stdio.

Each tool reads its typed settings from ``ToolContext.settings`` (``tools.settings``), built
once from the ``tools:`` section of glyphoxa.yaml by :func:`build_tool_context`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from campaigns.basics import GlyphoxaError
from tools.settings import BuiltinSettings
from tools.spec import BuiltinServer, ToolContext

if TYPE_CHECKING:  # only annotations: the CLI reads the names here without loading the models
    from tools.config import BuiltinToolsConfig

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "SERVER_NAMES",
    "SERVER_TOOLS",
    "build_tool_context",
    "create_builtin_servers",
    "create_server",
]

log = logging.getLogger(__name__)

#: Server name -> the tools it defines (kept in step with the modules by a test).
SERVER_TOOLS: dict[str, tuple[str, ...]] = {
    "dice": ("roll", "roll_table"),
    "rules": ("search_rules", "get_rule"),
    "memory": (
        "search_sessions",
        "query_entities",
        "get_summary",
        "search_facts",
        "propose_memory",
    ),
    "files": ("read_file", "write_file", "list_files"),
    "session": ("list_sessions", "get_session_summary", "search_history"),
    "ambience": ("play_track", "stop_music", "list_moods"),
    "images": ("generate_image",),
    "web": ("web_search", "fetch_page"),
}

SERVER_NAMES: tuple[str, ...] = tuple(SERVER_TOOLS)

#: Every built-in tool name (``glyphoxa check`` flags NPC whitelist entries outside it).
BUILTIN_TOOL_NAMES: frozenset[str] = frozenset(
    name for names in SERVER_TOOLS.values() for name in names
)


def create_server(name: str, ctx: ToolContext) -> BuiltinServer:
    """Build one built-in server by name; an unknown name lists the choices."""
    if name not in SERVER_TOOLS:
        raise GlyphoxaError(
            f"unknown built-in tool server {name!r}; choose from {', '.join(SERVER_NAMES)}"
        )
    module = importlib.import_module(f"tools.builtin.{name}")
    server: BuiltinServer = module.create_server(ctx)
    return server


def create_builtin_servers(
    ctx: ToolContext, names: Iterable[str] | None = None
) -> list[BuiltinServer]:
    """Build the named built-in servers (all of them when ``names`` is None).

    Args:
        ctx: What the tools may use: campaign folder, sandbox, memory store, ambience player.
        names: Server names (``dice``, ``rules``, ...); None means every server.
    """
    chosen = list(SERVER_NAMES if names is None else names)
    return [create_server(name, ctx) for name in chosen]


def build_tool_context(
    tools_config: BuiltinToolsConfig,
    *,
    campaign_dir: str | Path | None = None,
    memory: Any = None,
    memory_url: str | None = None,
    ambience: Any = None,
    publish_image: Callable[[Path, str], Awaitable[None]] | None = None,
    session_id: str | None = None,
    rules_cache: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ToolContext:
    """A ``ToolContext`` for the running bot (or ``glyphoxa serve-tool``) from its config.

    Args:
        tools_config: The ``tools:`` section of glyphoxa.yaml.
        campaign_dir: The campaign folder (tables, ambience).
        memory: An open ``campaigns.memory.MemoryStore``; else ``memory_url`` is opened by the
            memory/session servers at startup.
        memory_url: Database URL used when ``memory`` is None.
        ambience: The mixer's ambience player (``play(path, mood)``, ``stop()``).
        publish_image: Posts a generated image to the session's text channel.
        session_id: The running session, the default of ``get_session_summary``.
        rules_cache: False for commands that only look: a rules index built from the SRD is
            not saved.
        environ: Where ``OPENAI_API_KEY`` is looked up (``os.environ`` when None).
    """
    settings = BuiltinSettings.from_config(
        tools_config, memory_url=memory_url, rules_cache=rules_cache, environ=environ
    )
    return ToolContext(
        campaign_dir=Path(campaign_dir) if campaign_dir is not None else None,
        sandbox_dir=Path(tools_config.sandbox_dir),
        memory=memory,
        ambience=ambience,
        publish_image=publish_image,
        session_id=session_id,
        settings=settings,
    )
