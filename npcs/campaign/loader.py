"""Campaign folders: load ``campaign.yaml``, NPCs, entities, tables and ambience in one go.

Layout of ``campaigns/<name>/``::

    campaign.yaml        name, system, description          (campaigns.content.CampaignMeta)
    npcs/*.yaml          one NPC per file                    (npcs.schema.NpcDefinition)
    entities.yaml        knowledge-graph seed (optional)     (campaigns.content.EntitiesFile)
    tables/*.yaml        weighted random tables (optional)   (campaigns.content.RandomTable)
    ambience/<mood>/     audio files per mood (optional)

:func:`scan_campaign` collects every problem of every file (plus cross-file ones such as a
duplicate NPC name) without raising, and warnings about YAML that reads legally but probably
not as meant (``campaigns.yamlhints``), for ``glyphoxa check``; :func:`load_campaign` raises one
ContentError listing them all. Hot reload lives in :mod:`npcs.campaign.watch`; the records in
:mod:`npcs.campaign.model`; :mod:`npcs.campaign` is the room's face.
"""

from __future__ import annotations

import logging
from pathlib import Path

from campaigns.basics import GlyphoxaError
from campaigns.content import CampaignMeta, EntitiesFile, RandomTable
from campaigns.yamlhints import yaml_warnings
from campaigns.yamlio import ContentError, Issue, YamlDocument, load_model
from npcs.campaign.checks import content_issues
from npcs.campaign.model import (
    AUDIO_SUFFIXES,
    YAML_SUFFIXES,
    Campaign,
    CampaignScan,
    npc_files,
    unread_npc_files,
)
from npcs.schema import PROSE_LIST_FIELDS, NpcDefinition

__all__ = ["load_campaign", "scan_campaign"]

log = logging.getLogger(__name__)


def scan_campaign(path: str | Path) -> CampaignScan:
    """Load what is valid in a campaign folder and collect every problem; never raises for them.

    A GlyphoxaError is raised only when ``path`` is not a folder at all.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise GlyphoxaError(f"{folder}: campaign folder not found")
    issues: list[Issue] = []
    documents: dict[Path, YamlDocument] = {}

    meta_file = folder / "campaign.yaml"
    meta = CampaignMeta(name=folder.resolve().name)
    if meta_file.is_file():
        loaded_meta = load_model(meta_file, CampaignMeta)
        issues.extend(loaded_meta.issues)
        if loaded_meta.document is not None:
            documents[meta_file] = loaded_meta.document
        if loaded_meta.value is not None:
            meta = loaded_meta.value
    else:
        issues.append(Issue(str(meta_file), None, None, "missing campaign.yaml (name, system)"))

    campaign = Campaign(path=folder, meta=meta)
    files = npc_files(folder)
    if not files:
        issues.append(Issue(str(folder / "npcs"), None, None, "no NPC files (npcs/*.yaml)"))
    for npc_file in files:
        loaded = load_model(npc_file, NpcDefinition)
        issues.extend(loaded.issues)
        if loaded.document is not None:
            documents[npc_file] = loaded.document
        if loaded.value is not None:
            campaign.npcs.setdefault(loaded.value.name, loaded.value)
            campaign.npc_files.setdefault(loaded.value.name, npc_file)

    entities_file = folder / "entities.yaml"
    if entities_file.is_file():
        loaded_entities = load_model(entities_file, EntitiesFile, allow_empty=True)
        issues.extend(loaded_entities.issues)
        if loaded_entities.document is not None:
            documents[entities_file] = loaded_entities.document
        if loaded_entities.value is not None:
            campaign.entities = loaded_entities.value

    tables_dir = folder / "tables"
    table_files: dict[str, Path] = {}
    if tables_dir.is_dir():
        for table_file in sorted(tables_dir.iterdir()):
            if table_file.suffix not in YAML_SUFFIXES or table_file.name.startswith("."):
                continue
            loaded_table = load_model(table_file, RandomTable)
            issues.extend(loaded_table.issues)
            if loaded_table.document is not None:
                documents[table_file] = loaded_table.document
            if loaded_table.value is not None:
                table_files.setdefault(loaded_table.value.name, table_file)
                campaign.tables.setdefault(loaded_table.value.name, loaded_table.value)

    campaign.ambience = _ambience(folder / "ambience")
    issues.extend(content_issues(campaign, documents))
    warnings = _warnings(folder, documents, issues)
    return CampaignScan(campaign=campaign, issues=issues, documents=documents, warnings=warnings)


def _warnings(
    folder: Path, documents: dict[Path, YamlDocument], issues: list[Issue]
) -> list[Issue]:
    """Legal-but-probably-unmeant YAML and unread files in ``npcs/``; a warning at the place of
    an error is left out (the error already explains it)."""
    npc_dir = folder / "npcs"
    warnings = [
        Issue(str(path), None, None, _unread(path), "warning") for path in unread_npc_files(folder)
    ]
    for path, doc in documents.items():
        prose = PROSE_LIST_FIELDS if path.parent == npc_dir else ()
        warnings += yaml_warnings(doc, prose)
    errors = {(issue.file, issue.line, issue.column) for issue in issues}
    return [w for w in warnings if (w.file, w.line, w.column) not in errors]


def _unread(path: Path) -> str:
    suffix = "".join(path.suffixes[-1:])
    hint = f" (rename it to {path.name.removesuffix(suffix)})" if ".y" in path.name else ""
    return f"not read: NPC files end in .yaml or .yml{hint}"


def _ambience(folder: Path) -> dict[str, list[Path]]:
    if not folder.is_dir():
        return {}
    moods: dict[str, list[Path]] = {}
    for mood in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        moods[mood.name] = sorted(
            f for f in mood.iterdir() if f.suffix.lower() in AUDIO_SUFFIXES and f.is_file()
        )
    return moods


def load_campaign(path: str | Path) -> Campaign:
    """Load a campaign folder; raise ContentError listing every problem if anything is wrong."""
    scan = scan_campaign(path)
    if scan.issues:
        raise ContentError(scan.issues)
    log.info("loaded campaign %r with %d NPCs", scan.campaign.name, len(scan.campaign.npcs))
    return scan.campaign
