"""What a loaded campaign is: the :class:`Campaign` record and where its NPC files live.

The bottom of the campaign modules: ``npcs.campaign_checks`` (cross-file rules),
``npcs.campaign_watch`` (hot reload) and ``npcs.campaign`` (scanning a folder) all import this
and none of them import each other's importers, so there is no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from campaigns.content import CampaignMeta, EntitiesFile, RandomTable
from campaigns.yamlio import Issue, YamlDocument
from npcs.name_index import name_key
from npcs.schema import NpcDefinition

__all__ = ["AUDIO_SUFFIXES", "YAML_SUFFIXES", "Campaign", "CampaignScan", "npc_files"]

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

    @property
    def ok(self) -> bool:
        return not self.issues


def npc_files(folder: Path) -> list[Path]:
    """The NPC files of a campaign folder, sorted; dotfiles and editor backups are ignored."""
    npc_dir = folder / "npcs"
    if not npc_dir.is_dir():
        return []
    return sorted(
        p
        for p in npc_dir.iterdir()
        if p.suffix in YAML_SUFFIXES and not p.name.startswith((".", "_")) and p.is_file()
    )
