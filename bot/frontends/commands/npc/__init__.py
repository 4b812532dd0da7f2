"""``glyphoxa npc SUBCOMMAND``: NPC authoring commands.

A group: every module in this package with a ``register(npc_subparsers)`` function adds
subcommands (``new.py`` adds ``glyphoxa npc new``), so other areas add subcommands by adding a
module here without editing this file.
"""

from __future__ import annotations

import argparse

from bot.frontends.commands import register_modules
from bot.frontends.commands._options import Subcommands, add_campaign_option

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "npc",
        help="NPCs: scaffold one, list them, show what an NPC's LLM sees",
        description="NPC authoring: scaffold NPC files and inspect NPCs as the table runs them.",
    )
    add_campaign_option(parser)
    group = parser.add_subparsers(dest="npc_command", metavar="SUBCOMMAND")
    register_modules(__path__, __name__, group)
    parser.set_defaults(func=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
