"""``glyphoxa check [CAMPAIGN_DIR]``: validate the config and every campaign file at once.

Prints every problem as ``file:line:column: message`` (config, NPCs, entities, tables, and
cross-file problems such as a duplicate NPC alias or an unknown tool) and exits 1 if there is
any. Without CAMPAIGN_DIR the campaign named in the config (``campaign.path``) is checked.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config import GlyphoxaConfig
from bot.config_loader import check_config
from campaigns.yamlio import Issue
from npcs.campaign import Campaign, scan_campaign
from npcs.campaign_checks import tool_issues
from npcs.schema import EngineKind

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

    @property
    def ok(self) -> bool:
        return not self.issues


def run_check(
    campaign_dir: str | Path | None = None, *, config_path: str | Path | None = None
) -> CheckReport:
    """Check the config and a campaign folder; never raises for a user's content mistakes."""
    loaded = check_config(config_path)
    issues = list(loaded.issues)
    config = loaded.value
    default_folder = (config or GlyphoxaConfig()).campaign.path
    folder = Path(campaign_dir) if campaign_dir else Path(default_folder)
    scan = scan_campaign(folder)
    issues += scan.issues
    servers = config.mcp.servers if config is not None else []
    issues += tool_issues(scan.campaign, scan.documents, mcp_servers=servers)
    config_file = loaded.path if loaded.document is not None or loaded.issues else None
    notes = _notes(config, scan.campaign)
    return CheckReport(config_file, config, scan.campaign, issues, notes)


def _notes(config: GlyphoxaConfig | None, campaign: Campaign) -> list[str]:
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
        help="validate glyphoxa.yaml and a campaign folder (NPCs, entities, tables)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "campaign_dir",
        nargs="?",
        default=None,
        metavar="CAMPAIGN_DIR",
        help="campaign folder (default: campaign.path from the config)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    report = run_check(args.campaign_dir, config_path=args.config)
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
