"""CLI subcommands: one module per command group, each exposing ``register(subparsers)``.

Discovery means adding a command never edits the file that collects the commands. Every module
here is imported to build the parser (``glyphoxa --help`` included), so a command module imports
only the standard library and ``bot.frontends.commands`` at its top; its handlers import the rest
when they run.

``glyphoxa --help`` lists the commands in groups, in the order a Dungeon Master meets them
(:data:`GROUPS`). A command named there takes that place; another module may set a module-level
``GROUP`` constant (a group title) to join a group at its end; anything else is listed under
:data:`DEFAULT_GROUP`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = [
    "DEFAULT_GROUP",
    "GROUPS",
    "CommandEntry",
    "grouped",
    "register_module",
    "register_modules",
]

DEFAULT_GROUP = "More commands"

#: Group titles in the order ``glyphoxa --help`` shows them, each with its commands in order.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Getting started", ("doctor", "discord", "check", "rehearse", "run")),
    ("Authoring", ("campaign", "npc", "voices", "schema")),
    ("Try an NPC without a table", ("chat", "say", "tier", "address", "transcribe")),
    ("At the table and after", ("memory", "recap", "rules", "tools")),
    (DEFAULT_GROUP, ()),
    ("Developer", ("serve-tool", "bench")),
)


_PLACED = {name: title for title, names in GROUPS for name in names}
"""Command name -> the group :data:`GROUPS` places it in."""


@dataclass(frozen=True, slots=True)
class CommandEntry:
    """One top-level command as ``glyphoxa --help`` lists it."""

    name: str
    help: str
    group: str


class _Recorder:
    """Stands in for argparse's subparsers while a module registers, to note what it added."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers
        self.added: list[tuple[str, str]] = []

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._subparsers.add_parser(name, **kwargs)
        self.added.append((name, str(kwargs.get("help") or "")))
        return parser

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._subparsers, attribute)


def register_modules(path: Iterable[str], package: str, subparsers: Any) -> list[CommandEntry]:
    """Call ``register(subparsers)`` of every public module of a package, in name order.

    Args:
        path: the package's ``__path__``.
        package: the package's dotted name (``__name__``).
        subparsers: what ``argparse``'s ``add_subparsers`` returned.

    Returns:
        The commands registered, each with the group it is listed under.
    """
    entries: list[CommandEntry] = []
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"{package}.{info.name}")
            entries += register_module(module, subparsers)
    return entries


def register_module(module: ModuleType, subparsers: Any) -> list[CommandEntry]:
    """Call one module's ``register(subparsers)`` (none: nothing is added); the commands it
    added, each with the group it is listed under."""
    register = getattr(module, "register", None)
    if register is None:
        return []
    recorder = _Recorder(subparsers)
    register(recorder)
    module_group = str(getattr(module, "GROUP", DEFAULT_GROUP))
    return [
        CommandEntry(name, text, _PLACED.get(name, module_group)) for name, text in recorder.added
    ]


def grouped(entries: Iterable[CommandEntry]) -> list[tuple[str, list[CommandEntry]]]:
    """Commands by group, groups in :data:`GROUPS` order (unknown titles after them), each
    group's listed commands first in their listed order, then the others as registered."""
    titles = [title for title, _ in GROUPS]
    rank = {name: index for _, names in GROUPS for index, name in enumerate(names)}
    groups: dict[str, list[CommandEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    order = titles + [title for title in groups if title not in titles]
    # The default group comes before "Developer", which stays last (bench is for developers).
    result = []
    for title in order:
        members = groups.get(title)
        if not members:
            continue
        members.sort(key=lambda e: rank.get(e.name, len(rank)))  # stable: others keep order
        result.append((title, members))
    developer = next((item for item in result if item[0] == "Developer"), None)
    if developer is not None:
        result.remove(developer)
        result.append(developer)
    return result
