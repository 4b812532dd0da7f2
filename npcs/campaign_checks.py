"""Cross-file checks of a campaign: things no single file's schema can see.

- an NPC name or alias used twice, or by two NPCs, compared as addressing compares them
  (``npcs.name_index``: "Greymantle.", "Grey-mantle" and "Grey Mantle" are one name; so are
  "the sage" on one NPC and "Sage" on another), and a name with no letters to be heard by,
- an entity id defined twice, a relation to an entity that is not defined,
- two random tables with the same name,
- tool names in an NPC's whitelist that no tool provides (:func:`tool_issues`).

Tool-name rule (documented in the README): a whitelist entry is valid when it is ``*`` (every
tool), a built-in tool name (``roll``), ``<server>.*`` for a built-in or configured MCP server
(every tool of that server), ``<server>__<tool>`` for a configured MCP server, or an
``expose_as`` name of a configured MCP server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from campaigns.yamlio import Issue, YamlDocument, did_you_mean
from npcs.campaign_model import Campaign
from npcs.name_index import NameOwners, name_key

if TYPE_CHECKING:
    from tools.config import McpServerConfig

__all__ = [
    "BUILTIN_SERVER_NAMES",
    "FALLBACK_TOOL_NAMES",
    "content_issues",
    "known_builtin_tools",
    "tool_issues",
]

#: Built-in tool servers (tools/builtin), usable as ``<server>.*`` in a whitelist.
BUILTIN_SERVER_NAMES = frozenset(
    {"dice", "rules", "memory", "files", "session", "ambience", "images", "web"}
)

#: Used when ``tools.builtin`` cannot be imported (its names are pinned in the contracts).
FALLBACK_TOOL_NAMES = frozenset(
    {
        "roll",
        "roll_table",
        "search_rules",
        "get_rule",
        "search_sessions",
        "query_entities",
        "get_summary",
        "search_facts",
        "read_file",
        "write_file",
        "list_files",
        "list_sessions",
        "get_session_summary",
        "search_history",
        "play_track",
        "stop_music",
        "list_moods",
        "generate_image",
        "web_search",
        "fetch_page",
    }
)


def known_builtin_tools() -> frozenset[str]:
    """Names of the built-in tools: ``tools.builtin.BUILTIN_TOOL_NAMES`` or the pinned list."""
    try:
        from tools.builtin import BUILTIN_TOOL_NAMES
    except Exception:
        return FALLBACK_TOOL_NAMES
    return frozenset(BUILTIN_TOOL_NAMES)


def _builtin_server_names() -> frozenset[str]:
    try:
        from tools.builtin import SERVER_NAMES
    except Exception:
        return BUILTIN_SERVER_NAMES
    return frozenset(SERVER_NAMES)


def content_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    """Cross-file problems of a scanned campaign."""
    issues: list[Issue] = []
    issues.extend(_npc_name_issues(campaign, documents))
    issues.extend(_entity_issues(campaign, documents))
    issues.extend(_table_issues(campaign, documents))
    return issues


def _npc_name_issues(campaign: Campaign, documents: Mapping[Path, YamlDocument]) -> list[Issue]:
    issues: list[Issue] = []
    owners = NameOwners()
    files: dict[str, Path] = {}
    npc_dir = campaign.path / "npcs"
    for path, doc in documents.items():
        if path.parent != npc_dir or not isinstance(doc.data, dict):
            continue
        name = doc.data.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        entries: list[tuple[tuple[str | int, ...], str]] = [(("name",), name)]
        aliases = doc.data.get("aliases")
        if isinstance(aliases, list):
            entries += [(("aliases", i), a) for i, a in enumerate(aliases) if isinstance(a, str)]
        mine: set[str] = set()
        files.setdefault(name, path)
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
            clash = owners.claim(name, word)
            if clash is not None:
                other, other_word = clash
                where = files.get(other)
                source = f" ({where.name})" if where is not None else ""
                issues.append(
                    doc.issue(
                        loc,
                        f"'{word}' {_clash_text(other, other_word)}{source}; "
                        "players could not tell them apart",
                    )
                )
    return issues


def _clash_text(other: str, other_word: str) -> str:
    if name_key(other_word) == name_key(other):
        return f"is already a name or alias of {other}"
    return f"is already a name or alias of {other} (as '{other_word}')"


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
    campaign: Campaign,
    documents: Mapping[Path, YamlDocument],
    *,
    builtin_tools: Iterable[str] | None = None,
    mcp_servers: Iterable[McpServerConfig] = (),
) -> list[Issue]:
    """Whitelist entries that name no known tool (see the module docstring for the rule)."""
    known = set(known_builtin_tools() if builtin_tools is None else builtin_tools)
    servers = set(_builtin_server_names())
    prefixes: set[str] = set()
    for server in mcp_servers:
        servers.add(server.name)
        prefixes.add(f"{server.name}__")
        known.update(server.expose_as.values())
    issues: list[Issue] = []
    for name, npc in campaign.npcs.items():
        path = campaign.npc_files.get(name)
        doc = documents.get(path) if path is not None else None
        if doc is None:
            continue
        for index, tool in enumerate(npc.tools):
            if _tool_ok(tool, known, servers, prefixes):
                continue
            message = f"tools[{index}]: unknown tool '{tool}'" + did_you_mean(tool, known)
            if not any(tool.startswith(p) for p in prefixes) and "__" in tool:
                message += " (no MCP server with that prefix is configured)"
            issues.append(doc.issue(("tools", index), message))
    return issues


def _tool_ok(tool: str, known: set[str], servers: set[str], prefixes: set[str]) -> bool:
    if tool == "*" or tool in known:
        return True
    if tool.endswith(".*") and tool[:-2] in servers:
        return True
    return any(tool.startswith(prefix) and len(tool) > len(prefix) for prefix in prefixes)
