"""What ``glyphoxa check`` checks, for every part that needs it: the config, then a campaign
folder (NPCs, entities, tables, tool names, voices), as one report of issues with file, line
and column. The command (``bot.frontends.commands.check``), ``doctor``, the start-up preflight and
the DM's console's editor all call :func:`run_check`; no product module reaches into a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig
    from campaigns.yamlio import Issue, YamlDocument
    from npcs.campaign import Campaign

__all__ = ["CheckReport", "missing_campaign_message", "run_check"]


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
    from bot.settings.loader import check_config
    from campaigns.providers.voices import VoiceInventory
    from campaigns.yamlio import Issue
    from npcs.campaign import scan_campaign
    from npcs.campaign.checks import tool_issues, voice_issues
    from tools.catalog import ToolCatalog
    from tools.host.known_tools import known_tools_beside

    loaded = check_config(config_path)
    issues = list(loaded.issues)
    config = loaded.value
    if config is not None and loaded.document is not None and config.tools.srd_path:
        from tools.builtin.rules_sources import srd_folder_problem

        problem = srd_folder_problem(config.tools.srd_path)  # else the rules server would not start
        if problem is not None:
            issues.append(
                loaded.document.issue(("tools", "srd_path"), f"tools.srd_path: {problem}")
            )
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
        from bot.settings.config import GlyphoxaConfig

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


def missing_campaign_message(
    folder: Path, *, named: bool, config: str | Path | None = None, resolve: bool = True
) -> str:
    """One line saying which setting named a missing campaign folder and how to create it.

    Args:
        folder: The campaign folder that does not exist.
        named: It was given with ``--campaign``.
        config: The ``-c`` option (``resolve``) or the config file read (None: none).
        resolve: Find the config file as commands do, from ``config``.
    """
    if named:
        where = "--campaign"
    else:
        if resolve:
            from bot.settings.loader import resolve_config_path

            config = resolve_config_path(config)
        where = f"campaign.path in {config}" if config else "the default campaign.path"
    return (
        f"{folder}: campaign folder not found ({where}); "
        f"create it with: glyphoxa campaign new NAME --dir {folder}"
    )
