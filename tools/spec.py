"""How a tool is described once and used two ways: in-process by the host, or over MCP stdio.

This is the contract between the tool host (``tools/host``) and the built-in tool servers
(``tools/builtin``). A built-in server is a named list of ``ToolDef``s; the host calls the
handler directly (no protocol overhead) and ``tools.builtin.serve`` exposes the very same
definitions as a standalone MCP server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError
from tools.settings import BuiltinSettings

__all__ = [
    "FAILURE_META_KEY",
    "LATENCY_META_KEY",
    "BuiltinServer",
    "LatencyMeta",
    "ToolContext",
    "ToolDef",
    "ToolError",
    "ToolHandler",
]

#: Key under an MCP tool's ``_meta`` where Glyphoxa latency metadata lives.
LATENCY_META_KEY = "io.glyphoxa/latency"
#: ``_meta`` key a Glyphoxa server sets on an ``isError`` result that reports a crash (which
#: counts against the tool's health), as opposed to a clear refusal of bad input.
FAILURE_META_KEY = "io.glyphoxa/failure"


class ToolError(GlyphoxaError):
    """A tool's own clear failure ("no table named 'loot'; available: ..."), returned to the LLM
    as an ``is_error`` result rather than raised through the pipeline."""


@dataclass(frozen=True, slots=True)
class LatencyMeta:
    """Declared latency of a tool. ``None`` means undeclared: such a tool counts as DEEP until
    measured."""

    estimated_duration_ms: float | None = None
    max_duration_ms: float | None = None
    idempotent: bool = False
    cacheable_seconds: float = 0.0
    read_only: bool = False

    def to_meta(self) -> dict[str, Any]:
        """The ``_meta`` dict an MCP server publishes for this tool."""
        body: dict[str, Any] = {
            "idempotent": self.idempotent,
            "cacheable_seconds": self.cacheable_seconds,
            "read_only": self.read_only,
        }
        if self.estimated_duration_ms is not None:
            body["estimated_duration_ms"] = self.estimated_duration_ms
        if self.max_duration_ms is not None:
            body["max_duration_ms"] = self.max_duration_ms
        return {LATENCY_META_KEY: body}


#: A handler receives the validated arguments as keywords and returns JSON-able data
#: (dict/list/str/number). Raise ``ToolError`` for an expected failure.
ToolHandler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    latency: LatencyMeta = field(default_factory=LatencyMeta)
    output_schema: dict[str, Any] | None = None


@dataclass(slots=True)
class ToolContext:
    """What built-in tools may need from the running bot. Every field is optional so a
    standalone MCP server can start with only what its tools use.

    ``memory`` is the campaign memory store (``campaigns.memory``); ``ambience`` is the voice
    runtime's ambience player (an object with ``play(path: Path, mood: str)`` and ``stop()``);
    ``publish_image`` posts a generated image to the session's text channel when Discord runs;
    ``settings`` are the tools' typed settings from the ``tools:`` section of glyphoxa.yaml
    (``tools.settings``), its defaults when none are given.
    """

    campaign_dir: Path | None = None
    sandbox_dir: Path | None = None
    memory: Any = None
    ambience: Any = None
    publish_image: Callable[[Path, str], Awaitable[None]] | None = None
    session_id: str | None = None
    settings: BuiltinSettings = field(default_factory=BuiltinSettings.defaults)


@dataclass(slots=True)
class BuiltinServer:
    """A named group of built-in tools, e.g. ``dice`` with ``roll`` and ``roll_table``.

    ``startup``/``shutdown`` open and close resources (a database, an HTTP client); the host and
    the stdio server both call them.
    """

    name: str
    tools: list[ToolDef]
    startup: Callable[[], Awaitable[None]] | None = None
    shutdown: Callable[[], Awaitable[None]] | None = None
