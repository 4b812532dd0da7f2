"""``glyphoxa check [CAMPAIGN_DIR]``: validate the config and every campaign file at once.

Prints every problem as ``file:line:column: message`` (config, NPCs, entities, tables, and
cross-file problems such as a duplicate NPC name, a tool entry that grants nothing or a voice
that is not installed) and exits 1 if there is any. YAML that reads legally but probably not
as meant (a sentence split at its commas, a list item joined to the one above) is printed as
``file:line:column: warning: message``; warnings fail the check only with --strict. Without
CAMPAIGN_DIR the campaign named in the config (``campaign.path``) is checked.
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
from npcs.campaign_checks import tool_issues, voice_issues
from npcs.schema import EngineKind
from npcs.voices import VoiceInventory
from tools.catalog import ToolCatalog
from tools.host.known_tools import known_tools_beside

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
    warnings: list[Issue] = field(default_factory=list)
    """Legal YAML that probably does not say what was meant; fails the check only if strict."""

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
    warnings = list(scan.warnings)
    notes = _notes(config, scan.campaign)
    if config is None:  # tool names and voices depend on the config: judged once it is valid
        notes.append("note: tool names and voices are checked once glyphoxa.yaml is valid")
    else:
        catalog = ToolCatalog.from_config(
            config.mcp.servers,
            known_tools_path=known_tools_beside(Path(config.tools.calibration_path)),
        )
        for issue in tool_issues(scan.campaign, scan.documents, catalog):
            (warnings if issue.severity == "warning" else issues).append(issue)
        inventory = VoiceInventory.from_tts(config.providers.tts)
        issues += voice_issues(scan.campaign, scan.documents, inventory)
    config_file = loaded.path if loaded.document is not None or loaded.issues else None
    issues = issues[: len(loaded.issues)] + _in_order(issues[len(loaded.issues) :])
    return CheckReport(config_file, config, scan.campaign, issues, notes, _in_order(warnings))


def _in_order(issues: list[Issue]) -> list[Issue]:
    return sorted(issues, key=lambda i: (i.file, i.line or 0, i.column or 0))


def _notes(config: GlyphoxaConfig | None, campaign: Campaign) -> list[str]:
    if config is None or config.providers.realtime is not None:
        return []
    return [
        f"{campaign.npc_files[name]}: note: {name} uses engine realtime but "
        "providers.realtime is not configured in glyphoxa.yaml"
        for name, npc in campaign.npcs.items()
        if npc.engine == EngineKind.REALTIME and name in campaign.npc_files
    ]


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
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1) on warnings too, not only on problems",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    report = run_check(args.campaign_dir, config_path=args.config)
    for issue in report.issues:
        print(issue)
    for warning in report.warnings:
        print(warning)
    for note in report.notes:
        print(note, file=sys.stderr)
    failed = bool(report.issues) or (args.strict and bool(report.warnings))
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
