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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands._options import (
    Subcommands,
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
    warnings: list[Issue] = field(default_factory=list)
    """Legal YAML that probably does not say what was meant; fails the check only if strict."""

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
            "warnings": [
                {"file": i.file, "line": i.line, "column": i.column, "message": i.message}
                for i in self.warnings
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
    from npcs.campaign.checks import tool_issues, voice_issues
    from npcs.voices import VoiceInventory
    from tools.catalog import ToolCatalog
    from tools.host.known_tools import known_tools_beside

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
    issues = issues[: len(loaded.issues)] + _in_order(issues[len(loaded.issues) :])
    return CheckReport(
        config_file, config, scan.campaign, issues, notes, config_ok, _in_order(warnings)
    )


def _in_order(issues: list[Issue]) -> list[Issue]:
    return sorted(issues, key=lambda i: (i.file, i.line or 0, i.column or 0))


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
