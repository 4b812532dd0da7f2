"""The ``rules`` server: ``search_rules(query, system?)`` and ``get_rule(id)``.

The index always holds Glyphoxa's own summary. With an imported SRD (``glyphoxa rules import
PATH`` writes ``tools.rules_db``, ``.glyphoxa/rules.db`` by default) or ``tools.srd_path`` in the
config, it also holds the SRD 5.1 conditions, rules, spells, equipment, magic items and monsters.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError
from tools.builtin._common import define_tool, object_schema, standard
from tools.builtin.rules_index import SCHEMA_VERSION, RulesIndex
from tools.builtin.rules_sources import SUMMARY_PATH, load_srd, load_summary
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = [
    "SRD_ATTRIBUTION",
    "build_index",
    "create_server",
    "import_srd",
    "open_index",
]

log = logging.getLogger(__name__)

MAX_RULE_CHARS = 6000

SRD_ATTRIBUTION = (
    'This work includes material taken from the System Reference Document 5.1 ("SRD 5.1") by '
    "Wizards of the Coast LLC and available at "
    "https://dnd.wizards.com/resources/systems-reference-document. The SRD 5.1 is licensed under "
    "the Creative Commons Attribution 4.0 International License available at "
    "https://creativecommons.org/licenses/by/4.0/legalcode."
)

_SHORT_ATTRIBUTION = "SRD 5.1 by Wizards of the Coast LLC, CC-BY-4.0"

_SYSTEM_ALIASES = {
    "5e": "dnd5e",
    "dnd5e": "dnd5e",
    "dnd": "dnd5e",
    "dd5e": "dnd5e",
    "d5e": "dnd5e",
    "srd": "dnd5e",
    "srd51": "dnd5e",
    "5thedition": "dnd5e",
    "dungeonsanddragons": "dnd5e",
}


def _summary_hash() -> str:
    return hashlib.sha256(SUMMARY_PATH.read_bytes()).hexdigest()[:16]


def build_index(srd_path: str | Path | None) -> RulesIndex:
    """A fresh in-memory index of the summary plus, if given, the SRD folder."""
    index = RulesIndex.in_memory()
    index.add(load_summary())
    if srd_path is not None:
        count = index.add(load_srd(srd_path))
        index.set_meta("srd_path", str(Path(srd_path).expanduser().resolve()))
        log.info("indexed %d SRD entries from %s", count, srd_path)
    index.set_meta("schema_version", SCHEMA_VERSION)
    index.set_meta("summary_hash", _summary_hash())
    return index


def import_srd(srd_path: str | Path, db_path: str | Path) -> dict[str, Any]:
    """Build the index from the SRD folder and store it at ``db_path``; returns counts."""
    index = build_index(srd_path)
    try:
        index.save(Path(db_path))
        return {
            "db": str(db_path),
            "entries": index.count(),
            "srd_entries": index.count("srd5.1"),
            "summary_entries": index.count("summary"),
        }
    finally:
        index.close()


def _cache_usable(index: RulesIndex, srd_path: str | Path | None) -> bool:
    if index.get_meta("schema_version") != SCHEMA_VERSION:
        return False
    if index.get_meta("summary_hash") != _summary_hash():
        return False
    if srd_path is None:
        return True
    return index.get_meta("srd_path") == str(Path(srd_path).expanduser().resolve())


def open_index(srd_path: str | Path | None, db_path: Path, *, save: bool = True) -> RulesIndex:
    """The cached index at ``db_path`` if it matches, else a fresh build (cached when possible;
    ``save=False``: never written, for commands that only look things up).

    A stale cache (older schema or summary) is rebuilt from the SRD folder it was imported from
    when that folder still exists. Without any SRD the index holds only the summary.
    """
    if db_path.is_file():
        try:
            index = RulesIndex.load(db_path)
        except Exception as error:  # a damaged cache is rebuilt, not fatal
            log.warning("ignoring unreadable rules cache %s: %s", db_path, error)
        else:
            if _cache_usable(index, srd_path):
                return index
            previous = index.get_meta("srd_path")
            index.close()
            if srd_path is None and previous and Path(previous).is_dir():
                srd_path = previous
    index = build_index(srd_path)
    if srd_path is not None and save:
        try:
            index.save(db_path)
        except OSError as error:
            log.warning("could not write rules cache %s: %s", db_path, error)
    return index


def _normalize_system(system: str, known: list[str]) -> str:
    key = "".join(ch for ch in system.lower() if ch.isalnum())
    resolved = _SYSTEM_ALIASES.get(key, key)
    if resolved not in known:
        raise ToolError(
            f"no rules indexed for system {system!r}; available: {', '.join(known) or 'none'}"
        )
    return resolved


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Rules lookup; the index is opened at startup (or lazily on first use)."""
    state: dict[str, RulesIndex] = {}
    lock = asyncio.Lock()

    async def index() -> RulesIndex:
        if "index" not in state:
            async with lock:
                if "index" not in state:
                    rules = ctx.settings.rules
                    try:
                        state["index"] = await asyncio.to_thread(
                            open_index, rules.srd_path, rules.db_path, save=rules.cache
                        )
                    except GlyphoxaError as error:
                        raise ToolError(f"rules index unavailable: {error}") from None
        return state["index"]

    async def startup() -> None:
        await index()

    async def shutdown() -> None:
        current = state.pop("index", None)
        if current is not None:
            current.close()

    async def search_rules(
        query: str, system: str | None = None, category: str | None = None, limit: int = 5
    ) -> dict[str, Any]:
        rules = await index()
        if not query.strip():
            raise ToolError("search_rules: say what to look up, e.g. 'grappled' or 'fireball'")
        resolved = _normalize_system(system, rules.systems()) if system else None
        if category is not None and category not in rules.categories():
            raise ToolError(
                f"unknown category {category!r}; available: {', '.join(rules.categories())}"
            )
        hits = rules.search(query, limit=limit, system=resolved, category=category)
        result: dict[str, Any] = {"query": query, "results": [h.as_dict() for h in hits]}
        if any(h.source == "srd5.1" for h in hits):
            result["attribution"] = _SHORT_ATTRIBUTION
        if not hits:
            result["note"] = "no matching rules; try other words or a broader term"
        return result

    async def get_rule(id: str) -> dict[str, Any]:
        rules = await index()
        doc = rules.get(id.strip())
        if doc is None:
            hint = rules.search(id.split(":", 1)[-1].replace("-", " "), limit=3)
            suggestions = ", ".join(h.id for h in hint)
            extra = f"; did you mean {suggestions}?" if suggestions else ""
            raise ToolError(f"no rule with id {id!r}{extra}")
        text = doc.text
        body: dict[str, Any] = {
            "id": doc.id,
            "name": doc.name,
            "category": doc.category,
            "system": doc.system,
            "source": doc.source,
            "text": text[:MAX_RULE_CHARS],
        }
        if len(text) > MAX_RULE_CHARS:
            body["truncated"] = True
        if doc.source == "srd5.1":
            body["attribution"] = _SHORT_ATTRIBUTION
        return body

    latency = standard(estimated=600, maximum=1500, read_only=True, idempotent=True)
    latency_cached = standard(
        estimated=600, maximum=1500, read_only=True, idempotent=True, cacheable_seconds=3600
    )
    return BuiltinServer(
        name="rules",
        startup=startup,
        shutdown=shutdown,
        tools=[
            define_tool(
                "search_rules",
                "Search the game rules (conditions, actions, spells, items, monsters) by words or "
                "a spoken question such as 'what does grappled do'. Returns ids for get_rule.",
                object_schema(
                    {
                        "query": {"type": "string", "minLength": 1, "maxLength": 300},
                        "system": {
                            "type": "string",
                            "maxLength": 40,
                            "description": "Game system, e.g. dnd5e (default: all)",
                        },
                        "category": {
                            "type": "string",
                            "maxLength": 40,
                            "description": "Optional: condition, spell, monster, ...",
                        },
                        "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                    },
                    ["query"],
                ),
                search_rules,
                latency,
            ),
            define_tool(
                "get_rule",
                "Full text of one rules entry by id from search_rules, e.g. spell:fireball or "
                "condition:blinded.",
                object_schema({"id": {"type": "string", "minLength": 1, "maxLength": 120}}, ["id"]),
                get_rule,
                latency_cached,
            ),
        ],
    )
