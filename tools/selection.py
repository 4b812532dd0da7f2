"""What an NPC's ``tools:`` list grants: the one reading of every documented form.

An entry is one of:

- ``*``: every tool;
- ``<server>.*``: every tool of a server, built-in (``dice.*``) or MCP (``lore.*``);
- ``<server>__<tool>``: one tool of a server by its own name (``lore__lookup``), whatever name
  it is exposed under;
- any other text: the name a tool is exposed under: a built-in tool (``roll``), an MCP tool's
  own name, an ``expose_as`` name, or the ``<server>_<tool>`` name a name collision gave it.

The registry's view (what the LLM is offered), the executor's re-check (what may run), the
choice of built-in servers to start (``tools.catalog``) and ``glyphoxa check`` all ask
:meth:`ToolSelection.allows`, so the forms cannot mean different things in different places.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["PatternKind", "ToolPattern", "ToolSelection", "parse_pattern", "selection_for"]

PatternKind = Literal["all", "server", "qualified", "name", "invalid"]

#: Separator of ``<server>__<tool>``.
QUALIFIER = "__"


@dataclass(frozen=True, slots=True)
class ToolPattern:
    """One parsed ``tools:`` entry; ``problem`` says why an ``invalid`` one is not a form."""

    text: str
    kind: PatternKind
    server: str | None = None
    tool: str | None = None
    problem: str | None = None


def parse_pattern(text: str) -> ToolPattern:
    """Read one ``tools:`` entry (see the module docstring for the forms)."""
    if text == "*":
        return ToolPattern(text, "all")
    if not text.strip():
        return ToolPattern(text, "invalid", problem="an empty tool name")
    if text != text.strip():
        return ToolPattern(text, "invalid", problem="spaces around the tool name")
    if text.endswith(".*"):
        server = text[:-2]
        if not server or "*" in server:
            return ToolPattern(text, "invalid", problem="'.*' needs a server name before it")
        return ToolPattern(text, "server", server=server)
    if "*" in text:
        return ToolPattern(
            text, "invalid", problem="'*' works alone (every tool) or as <server>.* only"
        )
    server, separator, tool = text.partition(QUALIFIER)
    if separator and server and tool:
        return ToolPattern(text, "qualified", server=server, tool=tool)
    return ToolPattern(text, "name")


class ToolSelection:
    """A whole ``tools:`` list, compiled so one check costs a few set lookups."""

    __slots__ = ("_names", "_qualified", "_servers", "everything", "patterns")

    def __init__(self, entries: Iterable[str]) -> None:
        self.patterns = tuple(parse_pattern(entry) for entry in entries)
        self.everything = any(p.kind == "all" for p in self.patterns)
        self._servers = frozenset(p.server for p in self.patterns if p.kind == "server")
        self._qualified = frozenset(
            (p.server, p.tool) for p in self.patterns if p.kind == "qualified"
        )
        self._names = frozenset(p.text for p in self.patterns if p.kind in ("name", "qualified"))

    def allows(self, server: str, original: str, exposed: str) -> bool:
        """Whether the list grants the tool ``original`` of ``server``, exposed as ``exposed``.

        ``<server>__<tool>`` also matches a tool exposed under exactly that text (an MCP tool
        whose own name contains ``__``)."""
        return (
            self.everything
            or server in self._servers
            or exposed in self._names
            or (server, original) in self._qualified
            or (server, exposed) in self._qualified
        )

    def __bool__(self) -> bool:
        return bool(self.patterns)


@functools.lru_cache(maxsize=512)
def _compiled(entries: frozenset[str]) -> ToolSelection:
    return ToolSelection(sorted(entries))


def selection_for(whitelist: Iterable[str]) -> ToolSelection:
    """The compiled selection of a whitelist (cached: NPCs reuse the same few lists)."""
    return _compiled(frozenset(whitelist))
