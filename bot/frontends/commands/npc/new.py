"""``glyphoxa npc new NAME [--campaign DIR]``: scaffold a commented NPC file that passes check.

The file goes into the campaign's npcs/ folder: --campaign DIR, else campaign.path from the
config. The campaign must exist (create one with: glyphoxa campaign new NAME); an existing file
is never overwritten without --force.
"""

from __future__ import annotations

import argparse

from bot.frontends.commands._options import (
    TIER_NAMES,
    Subcommands,
    add_campaign_option,
    campaign_folder,
    load_config,
    plain,
)

__all__ = ["ENGINE_NAMES", "register"]

ENGINE_NAMES = ("cascaded", "realtime", "sentence_cascade")
"""NPC engines (``npcs.schema.EngineKind``; a test keeps them equal)."""


def register(group: Subcommands) -> None:
    parser = group.add_parser(
        "new",
        help="scaffold a commented NPC file",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NAME", help='the NPC\'s name, e.g. "Old Mag"')
    add_campaign_option(parser, default=argparse.SUPPRESS)
    parser.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="cascaded",
        help="how the NPC thinks and speaks (default: cascaded)",
    )
    parser.add_argument(
        "--tier",
        choices=TIER_NAMES,
        default="standard",
        help="slowest tool tier the NPC may use (default: standard)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from bot.frontends.scaffold import scaffold_npc

    config = load_config(args)
    folder = campaign_folder(args, config)
    target = scaffold_npc(args.name, folder, engine=args.engine, tier=args.tier, force=args.force)
    print(f"wrote {target}; edit it, then run: glyphoxa check --campaign {folder}")
    return 0
