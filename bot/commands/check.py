"""``glyphoxa check [--campaign DIR] [--json]``: validate the config and every campaign file.

Prints every problem as ``file:line:column: message``: the config's first, then the campaign's
(NPCs, entities, tables, and cross-file problems such as a duplicate NPC alias or an unknown
tool); exits 1 if there is any. The campaign is --campaign DIR (or, as in earlier versions, a
folder given as the only argument), else campaign.path from the config. While the config has
errors and names no campaign.path, the campaign is not checked: fix the config first, or name
the folder with --campaign.

--json prints {"ok", "config": {"path", "ok"}, "campaign": {"path", "name", "npcs",
"entities", "relations", "tables", "ambience_moods"} or null, "problems": [{"file", "line",
"column", "message"}], "notes": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands._options import (
    add_campaign_option,
    add_json_option,
    missing_campaign_message,
    plain,
)

if TYPE_CHECKING:
    from bot.config import GlyphoxaConfig
    from campaigns.yamlio import Issue, YamlDocument
    from npcs.campaign import Campaign

__all__ = ["CheckReport", "register", "run_check"]


@dataclass(slots=True)
class CheckReport:
    """Outcome of a check: every issue, and what was loaded."""

    config_path: Path | None
    config: GlyphoxaConfig | None
    campaign: Campaign | None
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things that work but may surprise (a fallback will be used); they do not fail the check."""
    config_ok: bool = True
    """The config file (or the defaults) loaded without a problem."""

    @property
    def ok(self) -> bool:
        return not self.issues

    def as_dict(self) -> dict[str, Any]:
        """The documented ``glyphoxa check --json`` shape."""
        campaign = self.campaign
        return {
            "ok": self.ok,
            "config": {
                "path": str(self.config_path) if self.config_path else None,
                "ok": self.config_ok,
            },
            "campaign": None
            if campaign is None
            else {
                "path": str(campaign.path),
                "name": campaign.name,
                "npcs": sorted(campaign.npcs),
                "entities": len(campaign.entities.entities),
                "relations": len(campaign.entities.relations),
                "tables": sorted(campaign.tables),
                "ambience_moods": sorted(campaign.ambience),
            },
            "problems": [
                {"file": i.file, "line": i.line, "column": i.column, "message": i.message}
                for i in self.issues
            ],
            "notes": list(self.notes),
        }


def run_check(
    campaign_dir: str | Path | None = None, *, config_path: str | Path | None = None
) -> CheckReport:
    """Check the config, then a campaign folder; never raises for a user's content mistakes.

    ``campaign_dir`` None means ``campaign.path`` of the config. A missing folder is a
    problem of the report, like any other.
    """
    from bot.config_loader import check_config
    from campaigns.yamlio import Issue
    from npcs.campaign import scan_campaign
    from npcs.campaign_checks import tool_issues

    loaded = check_config(config_path)
    issues = list(loaded.issues)
    config = loaded.value
    config_ok = not loaded.issues
    config_file = loaded.path if loaded.document is not None or loaded.issues else None
    named = campaign_dir is not None
    folder = (
        Path(campaign_dir)
        if campaign_dir is not None
        else _configured_folder(config, loaded.document)
    )
    if folder is None:
        note = (
            f"note: campaign not checked: {config_file} has errors; fix them first, "
            "or name the folder: glyphoxa check --campaign DIR"
        )
        return CheckReport(config_file, None, None, issues, [note], config_ok)
    if not folder.is_dir():
        message = missing_campaign_message(folder, named=named, config=config_file, resolve=False)
        issues.append(Issue(str(folder), None, None, message.removeprefix(f"{folder}: ")))
        return CheckReport(config_file, config, None, issues, [], config_ok)
    scan = scan_campaign(folder)
    issues += scan.issues
    servers = config.mcp.servers if config is not None else []
    issues += tool_issues(scan.campaign, scan.documents, mcp_servers=servers)
    notes = _notes(config, scan.campaign)
    return CheckReport(config_file, config, scan.campaign, issues, notes, config_ok)


def _configured_folder(config: GlyphoxaConfig | None, document: YamlDocument | None) -> Path | None:
    """campaign.path of a valid config (or the defaults); of an invalid one, the path it
    spells out if it does, else None."""
    if config is not None:
        return Path(config.campaign.path)
    if document is None:
        from bot.config import GlyphoxaConfig

        return Path(GlyphoxaConfig().campaign.path)
    data = document.data if isinstance(document.data, dict) else {}
    section = data.get("campaign")
    path = section.get("path") if isinstance(section, dict) else None
    return Path(path) if isinstance(path, str) and path.strip() else None


def _notes(config: GlyphoxaConfig | None, campaign: Campaign) -> list[str]:
    from npcs.schema import EngineKind

    if config is None or config.providers.realtime is not None:
        return []
    return [
        f"{campaign.npc_files[name]}: note: {name} uses engine realtime but "
        "providers.realtime is not configured in glyphoxa.yaml"
        for name, npc in campaign.npcs.items()
        if npc.engine == EngineKind.REALTIME and name in campaign.npc_files
    ]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check",
        help="validate glyphoxa.yaml and the campaign (NPCs, entities, tables)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(parser)
    parser.add_argument(
        "campaign_dir",
        nargs="?",
        default=None,
        metavar="CAMPAIGN_DIR",
        help="the campaign folder, as --campaign (kept for earlier scripts)",
    )
    add_json_option(parser, "the problems and what was loaded")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from campaigns.errors import GlyphoxaError

    if args.campaign and args.campaign_dir and Path(args.campaign) != Path(args.campaign_dir):
        raise GlyphoxaError(
            f"check: two campaign folders given ({args.campaign_dir} and --campaign "
            f"{args.campaign}); name one, with --campaign DIR"
        )
    report = run_check(args.campaign or args.campaign_dir, config_path=args.config)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return 0 if report.ok else 1
    for issue in report.issues:
        print(issue)
    for note in report.notes:
        print(note, file=sys.stderr)
    if report.issues:
        count = len(report.issues)
        print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
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
