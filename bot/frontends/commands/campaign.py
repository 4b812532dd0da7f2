"""``glyphoxa campaign new NAME [--dir DIR]``: start a campaign that passes check.

Creates DIR (default: campaigns/<name as a slug>; --campaign DIR is the same as --dir DIR) with
campaign.yaml, entities.yaml, npcs/ with one example NPC and tables/ with one example table,
each starting with the line that gives editors completion from the schema. Files already there
are kept, never overwritten; a folder that already has a campaign.yaml is refused.
"""

from __future__ import annotations

import argparse
import json

from bot.frontends.commands._options import Subcommands, add_json_option, plain

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "campaign",
        help="create a campaign folder",
        description="Campaign folders: campaign.yaml, npcs/, entities.yaml, tables/, ambience/.",
    )
    actions = parser.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)
    new = actions.add_parser(
        "new",
        help="scaffold a campaign folder with an example NPC",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    new.add_argument("name", metavar="NAME", help='the campaign\'s name, e.g. "The Sunken Crown"')
    new.add_argument(
        "--dir",
        "--campaign",
        dest="dir",
        metavar="DIR",
        default=None,
        help="folder to create (default: campaigns/ and the name as a slug, e.g. "
        "campaigns/the-sunken-crown)",
    )
    add_json_option(new, "the folder and the files created and kept")
    new.set_defaults(func=_new)


def _new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bot.frontends.scaffold import default_campaign_dir, scaffold_campaign

    folder = Path(args.dir) if args.dir else default_campaign_dir(args.name)
    result = scaffold_campaign(args.name, folder)
    if args.json:
        document = {
            "folder": str(result.folder),
            "created": [str(p) for p in result.created],
            "kept": [str(p) for p in result.kept],
        }
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    print(f"created campaign {args.name!r} in {folder}:")
    for path in result.created:
        print(f"  {path.relative_to(folder)}")
    for path in result.kept:
        print(f"  {path.relative_to(folder)} (already there, kept)")
    print(f"next: glyphoxa check --campaign {folder}")
    print(f"      glyphoxa npc new NAME --campaign {folder}")
    print(f"      to make it the default, set campaign.path: {folder} in glyphoxa.yaml")
    return 0
