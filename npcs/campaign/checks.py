"""Cross-file checks of a campaign: things no single file's schema can see.

- an NPC name or alias used twice, or by two NPCs, compared as addressing compares them
  (``npcs.name_index``: "Greymantle.", "Grey-mantle" and "Grey Mantle" are one name; so are
  "the sage" on one NPC and "Sage" on another), and a name with no letters to be heard by,
- an entity id defined twice, a relation to an entity that is not defined,
- two random tables with the same name,
- ``characters:`` entries of campaign.yaml that are no Discord user id, name an NPC, or give
  two players one character,
- entries of an NPC's ``tools:`` list that grant no tool (:func:`tool_issues`; the forms are
  read by ``tools.selection`` against a ``tools.catalog.ToolCatalog``, as the table reads them),
- NPC voices that are not installed (:func:`voice_issues`, against ``campaigns.providers.voices``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from campaigns.providers.voices import VoiceInventory
from campaigns.yamldoc import Loc
from campaigns.yamlio import ContentError, Issue, YamlDocument, did_you_mean, read_yaml
from campaigns.yamlmessages import dotted
from npcs.campaign.model import Campaign, looks_like_copy
from npcs.characters import character_name_problem, discord_id_problem
from npcs.name_index import NameOwners, name_key
from npcs.schema import NpcDefinition
from tools.catalog import ToolCatalog

__all__ = ["content_issues", "npc_voice_issue", "tool_issues", "voice_issues"]


def content_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    """Cross-file problems of a scanned campaign."""
    issues: list[Issue] = []
    issues.extend(_npc_name_issues(campaign, documents))
    issues.extend(_entity_issues(campaign, documents))
    issues.extend(_table_issues(campaign, documents))
    issues.extend(_character_issues(campaign, documents))
    return issues


def _character_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    """``characters:`` of campaign.yaml: Discord user ids, names that are no NPC's and that
    two players do not share."""
    doc = documents.get(campaign.path / "campaign.yaml")
    if doc is None:
        return []
    issues: list[Issue] = []
    taken: dict[str, str] = {}
    for user_id, name in campaign.meta.characters.items():
        problem = discord_id_problem(user_id)
        if problem is not None:
            issues.append(doc.issue(("characters", user_id), f"characters: {problem}", at_key=True))
            continue
        problem = character_name_problem(name, campaign.npcs.values())
        key = name_key(name)
        if problem is None and key in taken:
            problem = f"character name '{name}' is already played by {taken[key]}"
        if problem is not None:
            issues.append(doc.issue(("characters", user_id), f"characters.{user_id}: {problem}"))
        taken.setdefault(key, user_id)
    return issues


def _npc_name_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    """Names and aliases claimed per file, so a second file with the same NPC (a backup copy
    left in ``npcs/``) is refused naming both files, never a silent replacement."""
    issues: list[Issue] = []
    owners = NameOwners()
    claimed: dict[tuple[str, str], tuple[YamlDocument, Loc]] = {}
    npc_of: dict[str, str] = {}
    npc_dir = campaign.path / "npcs"
    for path, doc in documents.items():
        if path.parent != npc_dir or not isinstance(doc.data, dict):
            continue
        name = doc.data.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        owner = str(path)
        npc_of[owner] = name
        entries: list[tuple[Loc, str]] = [(("name",), name)]
        aliases = doc.data.get("aliases")
        if isinstance(aliases, list):
            entries += [(("aliases", i), a) for i, a in enumerate(aliases) if isinstance(a, str)]
        mine: set[str] = set()
        copy_of: str | None = None  # a whole file's duplicate is reported once, at its name
        for loc, word in entries:
            key = name_key(word)
            if not key:
                issues.append(
                    doc.issue(loc, f"'{word}' has no letters or digits; nobody could say it")
                )
                continue
            if key in mine:
                issues.append(doc.issue(loc, f"'{word}' is listed twice for {name}"))
                continue
            mine.add(key)
            clash = owners.claim(owner, word)
            if clash is None:
                claimed[(owner, word)] = (doc, loc)
                continue
            other, other_word = clash
            if other == copy_of:
                continue
            other_doc, other_loc = claimed[(other, other_word)]
            where = other_doc.issue(other_loc, "").where
            if loc == ("name",) and other_loc == ("name",):
                message = (
                    f"NPC name '{word}' is already used by {where}; every NPC file needs a "
                    "name of its own"
                )
                if looks_like_copy(path):
                    message += " (a backup copy? move it out of npcs/ or rename it to end in .bak)"
                copy_of = other
            else:
                role = "name" if other_loc == ("name",) else "alias"
                message = (
                    f"'{word}' is already a name or alias of {npc_of[other]} (the {role} "
                    f"'{other_word}' at {where}); players could not tell them apart"
                )
            issues.append(doc.issue(loc, message))
    return issues


def _entity_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    doc = documents.get(campaign.path / "entities.yaml")
    if doc is None:
        return []
    issues: list[Issue] = []
    defined: dict[str, int] = {}
    for index, entity in enumerate(campaign.entities.entities):
        key = entity.key
        if key in defined:
            where = ("entities", index, "id" if entity.id else "name")
            issues.append(
                doc.issue(where, f"entity id '{key}' is already used by entities[{defined[key]}]")
            )
        else:
            defined[key] = index
    for index, relation in enumerate(campaign.entities.relations):
        for field_name, yaml_key in (("source", "from"), ("target", "to")):
            ref = getattr(relation, field_name)
            if ref not in defined:
                message = f"relation {yaml_key} '{ref}' is not a defined entity id"
                message += did_you_mean(ref, defined)
                issues.append(doc.issue(("relations", index, yaml_key), message))
    return issues


def _table_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    issues: list[Issue] = []
    seen: dict[str, Path] = {}
    tables_dir = campaign.path / "tables"
    for path, doc in sorted(documents.items()):
        if path.parent != tables_dir or not isinstance(doc.data, dict):
            continue
        name = doc.data.get("name")
        if not isinstance(name, str):
            continue
        if name in seen:
            issues.append(
                doc.issue(("name",), f"table name '{name}' is already used by {seen[name].name}")
            )
        else:
            seen[name] = path
    return issues


def tool_issues(
    campaign: Campaign, documents: Mapping[Path, YamlDocument], catalog: ToolCatalog
) -> list[Issue]:
    """Whitelist entries that grant nothing (errors, with the closest form that would) or
    grant nothing today for a reason the DM may not know (warnings: a disabled MCP server, a
    server check has not seen). Entries are read by ``tools.selection``, as the table reads
    them."""
    issues: list[Issue] = []
    for name, npc in campaign.npcs.items():
        path = campaign.npc_files.get(name)
        doc = documents.get(path) if path is not None else None
        if doc is None:
            continue
        for index, entry in enumerate(npc.tools):
            resolved = catalog.resolve(entry)
            if resolved.error is not None:
                issues.append(doc.issue(("tools", index), f"tools[{index}]: {resolved.error}"))
            elif resolved.warning is not None:
                message = f"tools[{index}]: {resolved.warning}"
                issues.append(doc.issue(("tools", index), message, severity="warning"))
    return issues


def voice_issues(
    campaign: Campaign, documents: Mapping[Path, YamlDocument], inventory: VoiceInventory
) -> list[Issue]:
    """NPC voices that cannot be spoken here (:func:`npc_voice_issue` for each NPC)."""
    issues: list[Issue] = []
    for name, npc in campaign.npcs.items():
        path = campaign.npc_files.get(name)
        doc = documents.get(path) if path is not None else None
        issue = npc_voice_issue(npc, path, doc, inventory)
        if issue is not None:
            issues.append(issue)
    return issues


def npc_voice_issue(
    npc: NpcDefinition, path: Path | None, doc: YamlDocument | None, inventory: VoiceInventory
) -> Issue | None:
    """The NPC's voice checked against the installed voices (``campaigns.providers.voices``):
    an unknown voice is an error at its line, never a silent change to another voice at the
    table."""
    voice = npc.voice
    problem = inventory.problem(voice.provider, voice.voice)
    if problem is None:
        return None
    provider_wrong = inventory.availability(voice.provider) is not None
    loc: Loc = (
        ("voice", "provider") if provider_wrong or voice.voice is None else ("voice", "voice")
    )
    message = f"{dotted(loc)}: {problem}"
    if doc is None and path is not None:
        try:
            doc = read_yaml(path)
        except ContentError:
            doc = None
    if doc is None:
        return Issue(str(path or npc.name), None, None, message)
    return doc.issue(loc, message)
