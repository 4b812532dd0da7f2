"""What a loaded campaign is: the :class:`Campaign` record and where its NPC files live.

The bottom of the campaign modules: ``npcs.campaign.checks`` (cross-file rules),
``npcs.campaign.watch`` (hot reload) and ``npcs.campaign`` (scanning a folder) all import this
and none of them import each other's importers, so there is no import cycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from campaigns.content import CampaignMeta, EntitiesFile, RandomTable
from campaigns.yamlio import Issue, YamlDocument
from npcs.name_index import name_key
from npcs.schema import NpcDefinition

__all__ = [
    "AUDIO_SUFFIXES",
    "BACKUP_SUFFIXES",
    "YAML_SUFFIXES",
    "Campaign",
    "CampaignScan",
    "looks_like_copy",
    "npc_files",
    "unread_npc_files",
]

YAML_SUFFIXES = (".yaml", ".yml")
AUDIO_SUFFIXES = (".wav", ".ogg", ".mp3", ".flac", ".opus")


@dataclass(slots=True)
class Campaign:
    """A loaded campaign folder. ``npcs`` and ``tables`` are keyed by name."""

    path: Path
    meta: CampaignMeta
    npcs: dict[str, NpcDefinition] = field(default_factory=dict)
    npc_files: dict[str, Path] = field(default_factory=dict)
    """NPC name -> the file it was loaded from."""
    entities: EntitiesFile = field(default_factory=EntitiesFile)
    tables: dict[str, RandomTable] = field(default_factory=dict)
    ambience: dict[str, list[Path]] = field(default_factory=dict)
    """Mood name (sub-folder of ``ambience/``) -> its audio files, sorted."""

    @property
    def name(self) -> str:
        return self.meta.name

    def find_npc(self, name: str) -> NpcDefinition | None:
        """The NPC called ``name`` or one of its aliases, compared as addressing compares names
        (case, punctuation, accents and invisible characters do not matter)."""
        wanted = name_key(name)
        if not wanted:
            return None
        for npc in self.npcs.values():
            if any(name_key(candidate) == wanted for candidate in npc.names()):
                return npc
        return None


@dataclass(slots=True)
class CampaignScan:
    """Everything found in a campaign folder: the valid parts and every issue."""

    campaign: Campaign
    issues: list[Issue]
    documents: dict[Path, YamlDocument] = field(default_factory=dict)
    """Parsed documents by file, so later checks can point at lines."""
    warnings: list[Issue] = field(default_factory=list)
    """YAML that reads legally but probably not as meant, files in ``npcs/`` that are not
    read; they never stop a campaign from loading."""

    @property
    def ok(self) -> bool:
        return not self.issues


#: Name endings of files that are kept on purpose but never read (editor and manual backups).
BACKUP_SUFFIXES = (".bak", ".orig", ".old", ".swp", ".tmp", "~")
_COPY_STEM = re.compile(
    r"(~|(?<![a-z0-9])(copy|backup|bak|old|orig)( ?\(?\d+\)?)?\)?|\(\d+\))$", re.IGNORECASE
)


def looks_like_copy(path: Path) -> bool:
    """Whether a YAML file's name says it is a copy of another (``bartok copy.yaml``,
    ``bartok~.yaml``, ``bartok (2).yml``, ``bartok_backup.yaml``)."""
    return bool(_COPY_STEM.search(path.stem))


def _is_npc_file(path: Path) -> bool:
    return (
        path.suffix.lower() in YAML_SUFFIXES
        and not path.name.startswith((".", "_"))
        and path.is_file()
    )


def npc_files(folder: Path) -> list[Path]:
    """The NPC files of a campaign folder: ``npcs/*.yaml`` and ``*.yml`` (any case), not hidden
    (``.``) or set aside (``_``). Sorted, with files whose name says they are a copy after
    the others, so a duplicate NPC is reported on the copy."""
    npc_dir = folder / "npcs"
    if not npc_dir.is_dir():
        return []
    found = [p for p in npc_dir.iterdir() if _is_npc_file(p)]
    return sorted(found, key=lambda p: (looks_like_copy(p), p.name))


def unread_npc_files(folder: Path) -> list[Path]:
    """Files in ``npcs/`` that are not NPC files and not obviously kept aside (hidden, ``_``,
    backups): ``bartok.yaml.txt`` saved by an editor, ``mira.json``. ``check`` warns about
    them, so an NPC that is not loaded is never a mystery."""
    npc_dir = folder / "npcs"
    if not npc_dir.is_dir():
        return []
    return sorted(
        p
        for p in npc_dir.iterdir()
        if p.is_file()
        and not _is_npc_file(p)
        and not p.name.startswith((".", "_"))
        and not p.name.lower().endswith(BACKUP_SUFFIXES)
    )
