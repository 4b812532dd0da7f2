"""CLI subcommands: one module per command group, each exposing ``register(subparsers)``."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any

__all__ = ["register_modules"]


def register_modules(path: Iterable[str], package: str, subparsers: Any) -> None:
    """Call ``register(subparsers)`` of every public module of a package, in name order.

    Discovery means adding a command never edits the file that collects the commands.

    Args:
        path: the package's ``__path__``.
        package: the package's dotted name (``__name__``).
        subparsers: what ``argparse``'s ``add_subparsers`` returned.
    """
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
