"""``glyphoxa npc SUBCOMMAND``: NPC authoring commands.

A group: every module in this package with a ``register(npc_subparsers)`` function adds one
subcommand (``new.py`` adds ``glyphoxa npc new``), so other areas add subcommands by adding a
module here without editing this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("npc", help="NPC authoring: scaffold and inspect NPC files")
    group = parser.add_subparsers(dest="npc_command", metavar="SUBCOMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register_sub = getattr(module, "register", None)
        if register_sub is not None:
            register_sub(group)
    parser.set_defaults(func=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
