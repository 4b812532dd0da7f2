"""``glyphoxa schema KIND``: JSON Schema (Draft 2020-12) of the YAML files, for editor completion.

Point an editor at it with a first line such as
``# yaml-language-server: $schema=../../../schemas/npc.schema.json`` (the YAML language server
of VS Code, Neovim, Helix and JetBrains reads it). ``glyphoxa campaign new`` writes these lines
for you. ``glyphoxa schema all -o schemas`` refreshes the copies committed in ``schemas/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bot.frontends.commands._options import Subcommands, plain

__all__ = ["SCHEMA_KINDS", "register"]

SCHEMA_KINDS = ("npc", "campaign", "config", "entities", "table", "scene")
"""The files with a schema (``bot.frontends.schemas.SCHEMA_MODELS``; a test keeps them equal)."""


def __getattr__(name: str) -> Any:
    """``json_schema``, ``schema_file_name`` and ``SCHEMA_MODELS`` lived here; they are in
    ``bot.frontends.schemas`` now (imported on first use, so building the parser stays light)."""
    if name in {"SCHEMA_MODELS", "DRAFT_2020_12", "json_schema", "schema_file_name"}:
        import bot.frontends.schemas

        return getattr(bot.frontends.schemas, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "schema",
        help="print the JSON Schema of an NPC, campaign, config, entities, table or scene file",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("kind", choices=[*SCHEMA_KINDS, "all"], help="which file's schema")
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="write to this file (for 'all': this folder, default schemas/) instead of stdout",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from bot.frontends.schemas import schema_file_name, schema_text

    if args.kind == "all":
        folder = Path(args.output or "schemas")
        folder.mkdir(parents=True, exist_ok=True)
        for kind in SCHEMA_KINDS:
            target = folder / schema_file_name(kind)
            target.write_text(schema_text(kind), encoding="utf-8")
            print(f"wrote {target}")
        return 0
    text = schema_text(args.kind)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
