"""``glyphoxa check [--campaign DIR] [--strict] [--json]``: validate the config and every
campaign file.

Prints every problem as ``file:line:column: message``: the config's first, then the campaign's
(NPCs, entities, tables, and cross-file problems such as a duplicate NPC name, a tool entry that
grants nothing or a voice that is not installed); exits 1 if there is any. YAML that reads
legally but probably not as meant (a sentence split at its commas, a list item joined to the
one above) is printed as ``file:line:column: warning: message``; warnings fail the check only
with --strict. The config is -c FILE (or a config file given as the only argument: glyphoxa
check my-glyphoxa.yaml), else $GLYPHOXA_CONFIG, else ./glyphoxa.yaml. The campaign is
--campaign DIR (or a folder, or a file inside one, given as the only argument), else
campaign.path from the config. While the config has errors and names no campaign.path, the
campaign is not checked: fix the config first, or name the folder with --campaign.

--json prints {"ok", "config": {"path", "ok"}, "campaign": {"path", "name", "npcs",
"entities", "relations", "tables", "ambience_moods"} or null, "problems": [{"file", "line",
"column", "message"}], "warnings": [the same], "notes": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bot.frontends.checking import CheckReport, run_check
from bot.frontends.commands._options import Subcommands, add_campaign_option, add_json_option, plain

__all__ = ["CheckReport", "register", "run_check"]


def _summary(problems: int, warnings: int, strict: bool) -> str:
    parts = []
    if problems:
        parts.append(f"{problems} problem{'s' if problems != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    text = " and ".join(parts) + " found"
    if warnings and not problems and not strict:
        text += " (warnings do not fail the check; --strict makes them)"
    return text


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "check",
        help="validate glyphoxa.yaml and the campaign (NPCs, entities, tables)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(parser)
    parser.add_argument(
        "target",
        nargs="?",
        default=None,
        metavar="PATH",
        help="a campaign folder (as --campaign), a file inside one, or a config file (as -c)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1) on warnings too, not only on problems",
    )
    add_json_option(parser, "the problems, warnings and what was loaded")
    parser.set_defaults(func=_run)


def campaign_of(path: Path) -> Path | None:
    """The campaign folder a file belongs to (``campaign.yaml`` beside it or one folder up:
    ``npcs/bartok.yaml``, ``entities.yaml``), or None."""
    for folder in (path.parent, path.parent.parent):
        if (folder / "campaign.yaml").is_file():
            return folder
    return None


def _targets(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(config, campaign) from -c, --campaign and the one PATH argument."""
    from campaigns.basics import GlyphoxaError

    config, campaign, target = args.config, args.campaign, args.target
    if target is not None and Path(target).is_file():
        folder = campaign_of(Path(target))
        if folder is None:  # a file outside any campaign: the config to check
            if config and Path(config) != Path(target):
                raise GlyphoxaError(
                    f"check: two config files given ({target} and -c {config}); name one"
                )
            return target, campaign
        target = str(folder)
    if campaign and target and Path(campaign) != Path(target):
        raise GlyphoxaError(
            f"check: two campaign folders given ({target} and --campaign {campaign}); name "
            "one, with --campaign DIR"
        )
    return config, campaign or target


def _run(args: argparse.Namespace) -> int:
    config_path, campaign_dir = _targets(args)
    report = run_check(campaign_dir, config_path=config_path)
    failed = bool(report.issues) or (args.strict and bool(report.warnings))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return 1 if failed else 0
    for issue in report.issues:
        print(issue)
    for warning in report.warnings:
        print(warning)
    for note in report.notes:
        print(note, file=sys.stderr)
    if report.issues or report.warnings:
        print(_summary(len(report.issues), len(report.warnings), args.strict), file=sys.stderr)
    if failed:
        return 1
    campaign = report.campaign
    config_name = str(report.config_path) if report.config_path else "defaults (no glyphoxa.yaml)"
    print(f"config: {config_name}: ok")
    if campaign is not None:
        moods = len(campaign.ambience)
        print(
            f"campaign {campaign.name!r} ({campaign.path}): ok: {len(campaign.npcs)} NPCs, "
            f"{len(campaign.entities.entities)} entities, "
            f"{len(campaign.entities.relations)} relations, {len(campaign.tables)} tables, "
            f"{moods} ambience moods"
        )
    return 0
