"""L3 knowledge graph: entities with attributes and typed relations, seeded from entities.yaml.

Lookup is fuzzy: exact name or alias first, then substring, then close spellings (speech-to-text
writes "Bartock" for "Bartok"), so an NPC's tool call finds the entity the player meant.
"""

from __future__ import annotations

import difflib
import math
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.basics import GlyphoxaError
from campaigns.content import ENTITY_TYPES, EntitiesFile
from campaigns.memory.models import Chunk, Entity, ProposedFact, Relation, table_of

__all__ = ["NameIndex", "entity_summary", "find_entities", "search_names", "seed"]

ENTITIES = table_of(Entity)
RELATIONS = table_of(Relation)
CHUNKS = table_of(Chunk)
FACTS = table_of(ProposedFact)
_FUZZY_CUTOFF = 0.75
#: Dice coefficient of character bigrams a form needs before the exact (slower) ratio runs.
_BIGRAM_CUTOFF = 0.4
_REVALIDATE_S = 1.0
#: Approved facts carried on an entity's lookup row (and so into the NPCs' prompts).
_ROW_FACTS = 5


def search_names(name: str, aliases: list[str]) -> str:
    """The ``search_names`` column: ``|name|alias|...|`` lower-cased, for LIKE and exact match."""
    return "|" + "|".join(n.strip().lower() for n in [name, *aliases] if n.strip()) + "|"


async def seed(connection: AsyncConnection, entities: EntitiesFile) -> tuple[int, int]:
    """Insert or update entities and add missing relations; returns (entities, new relations).

    Relations may point at entities already in the database. An unknown endpoint is refused before
    anything is written. Each described entity is also a searchable chunk (kind ``entity``,
    :func:`index_entities`), so ``search_facts`` finds what the campaign was written with, not
    only what was said or approved since.
    """
    now = time.time()
    keys = {seed.key for seed in entities.entities}
    existing = set((await connection.execute(select(ENTITIES.c.id))).scalars())
    for relation in entities.relations:
        for end in (relation.source, relation.target):
            if end not in keys and end not in existing:
                raise GlyphoxaError(
                    f"entities.yaml: relation {relation.source} -{relation.type}-> "
                    f"{relation.target} names unknown entity {end!r}"
                )
    for seed_entity in entities.entities:
        values = {
            "name": seed_entity.name,
            "type": seed_entity.type,
            "description": seed_entity.description,
            "aliases": list(seed_entity.aliases),
            "attributes": dict(seed_entity.attributes),
            "search_names": search_names(seed_entity.name, seed_entity.aliases),
            "updated_at": now,
        }
        if seed_entity.key in existing:
            await connection.execute(
                update(ENTITIES).where(ENTITIES.c.id == seed_entity.key).values(**values)
            )
        else:
            await connection.execute(insert(ENTITIES).values(id=seed_entity.key, **values))
            existing.add(seed_entity.key)
    await index_entities(connection)
    triples = select(RELATIONS.c.source_id, RELATIONS.c.type, RELATIONS.c.target_id)
    present: set[tuple[str, str, str]] = {
        (a, b, c) for a, b, c in await connection.execute(triples)
    }
    added = 0
    for relation in entities.relations:
        key = (relation.source, relation.type, relation.target)
        if key in present:
            continue
        present.add(key)
        await connection.execute(
            insert(RELATIONS).values(
                source_id=relation.source,
                type=relation.type,
                target_id=relation.target,
                description=relation.description,
            )
        )
        added += 1
    return len(entities.entities), added


async def index_entities(connection: AsyncConnection) -> int:
    """One ``entity`` chunk per described entity ("Name: description"), added or updated to
    match the entity as stored (seeded, or changed since); returns how many changed."""
    held = {
        row.entity_id: (row.id, row.text)
        for row in await connection.execute(
            select(CHUNKS.c.id, CHUNKS.c.entity_id, CHUNKS.c.text).where(CHUNKS.c.kind == "entity")
        )
    }
    now = time.time()
    changed = 0
    for entity in await connection.execute(
        select(ENTITIES.c.id, ENTITIES.c.name, ENTITIES.c.description)
    ):
        description = (entity.description or "").strip()
        if not description:
            continue
        text = f"{entity.name}: {description}"
        found = held.get(entity.id)
        if found is None:
            await connection.execute(
                insert(CHUNKS).values(kind="entity", entity_id=entity.id, text=text, created_at=now)
            )
        elif found[1] != text:
            await connection.execute(
                update(CHUNKS)
                .where(CHUNKS.c.id == found[0])
                .values(text=text, created_at=now, embedding=None, embedded_at=None)
            )
        else:
            continue
        changed += 1
    return changed


def _public(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "type": row.type,
        "description": row.description,
        "aliases": list(row.aliases or []),
        "attributes": dict(row.attributes or {}),
    }


class NameIndex:
    """In-memory names and aliases of every entity, for sub-millisecond fuzzy lookup.

    Each row carries the entity's newest DM-approved facts (``facts``), so a name lookup tells
    what the campaign knows about it. Reloaded when the entity count or newest ``updated_at``
    changes, or an approval does; that cheap check runs at most every ``_REVALIDATE_S`` seconds
    (this process's own writes invalidate at once), so a lookup needs no database round trip and
    another process's entities and approvals appear within a second.
    """

    def __init__(self) -> None:
        self._version: tuple[Any, ...] | None = None
        self._checked_at = -math.inf
        self.rows: dict[str, dict[str, Any]] = {}
        """Public form of every entity by id, in name order."""
        self._entries: list[tuple[str, str, list[str], str]] = []
        """``(id, type, names, joined search_names)`` in name order."""
        self._forms: list[tuple[int, str, int]] = []
        """``(entry, form, number of bigrams)`` for every name, alias and word of one."""
        self._postings: dict[str, list[int]] = {}

    def invalidate(self) -> None:
        """Reload on the next lookup (this process changed entities)."""
        self._checked_at = -math.inf

    async def refresh(self, connection: AsyncConnection) -> None:
        now = time.monotonic()
        if now - self._checked_at < _REVALIDATE_S:
            return
        self._checked_at = now
        approved = FACTS.c.status == "approved"
        version = tuple(
            (
                await connection.execute(
                    select(
                        select(func.count()).select_from(ENTITIES).scalar_subquery(),
                        select(func.max(ENTITIES.c.updated_at)).scalar_subquery(),
                        select(func.count()).select_from(FACTS).where(approved).scalar_subquery(),
                        select(func.max(FACTS.c.decided_at)).where(approved).scalar_subquery(),
                    )
                )
            ).one()
        )
        if version == self._version:
            return
        rows = (await connection.execute(select(ENTITIES).order_by(ENTITIES.c.name))).all()
        self.rows = {row.id: {**_public(row), "facts": []} for row in rows}
        facts = await connection.execute(
            select(FACTS.c.entity_id, FACTS.c.text).where(approved).order_by(FACTS.c.id)
        )
        for entity_id, text in facts:
            if entity_id in self.rows:
                known = self.rows[entity_id]["facts"]
                known.append(text)
                del known[:-_ROW_FACTS]  # the newest few; get_summary has them all
        self._entries = [
            (r.id, r.type, r.search_names.strip("|").split("|"), r.search_names) for r in rows
        ]
        self._forms = []
        self._postings = {}
        for entry, (_, _, names, _) in enumerate(self._entries):
            for name in names:
                for form in dict.fromkeys((name, *name.split())):
                    grams = _bigrams(form)
                    for gram in grams:
                        self._postings.setdefault(gram, []).append(len(self._forms))
                    self._forms.append((entry, form, len(grams)))
        self._version = version

    def match(self, wanted: str, type_: str | None, limit: int) -> list[str]:
        """Entity ids: exact name/alias/id, then prefix, then substring, else close spellings."""
        ranked: list[tuple[int, str, str]] = []
        for entity_id, entity_type, names, joined in self._entries:
            if (type_ is not None and entity_type != type_) or (
                wanted not in joined and wanted != entity_id
            ):
                continue
            if wanted == entity_id or wanted in names:
                ranked.append((0, names[0], entity_id))
            elif any(name.startswith(wanted) for name in names):
                ranked.append((1, names[0], entity_id))
            elif any(wanted in name for name in names):
                ranked.append((2, names[0], entity_id))
        if ranked:
            return [entity_id for _, _, entity_id in sorted(ranked)[:limit]]
        return self._fuzzy(wanted, type_, limit)

    def _fuzzy(self, wanted: str, type_: str | None, limit: int) -> list[str]:
        grams = _bigrams(wanted)
        shared: dict[int, int] = {}
        for gram in grams:
            for form_index in self._postings.get(gram, ()):
                shared[form_index] = shared.get(form_index, 0) + 1
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(wanted)
        scores: dict[str, float] = {}
        for form_index, count in shared.items():
            entry, form, size = self._forms[form_index]
            if 2 * count / (len(grams) + size) < _BIGRAM_CUTOFF:
                continue
            entity_id, entity_type, _, _ = self._entries[entry]
            if type_ is not None and entity_type != type_:
                continue
            matcher.set_seq1(form)
            ratio = matcher.ratio()
            if ratio >= _FUZZY_CUTOFF and ratio > scores.get(entity_id, 0.0):
                scores[entity_id] = ratio
        return sorted(scores, key=lambda i: (-scores[i], i))[:limit]


def _bigrams(form: str) -> set[str]:
    padded = f" {form} "
    return {padded[i : i + 2] for i in range(len(padded) - 1)}


async def find_entities(
    connection: AsyncConnection,
    index: NameIndex,
    name: str | None,
    type_: str | None,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Entities matching ``name`` (exact, prefix, substring, then fuzzy) and/or ``type``."""
    if type_ is not None and type_ not in ENTITY_TYPES:
        raise GlyphoxaError(f"unknown entity type {type_!r}; choose from {', '.join(ENTITY_TYPES)}")
    await index.refresh(connection)
    wanted = (name or "").strip().lower()
    if wanted:
        found = [index.rows[i] for i in index.match(wanted, type_, limit)]
    else:
        found = [r for r in index.rows.values() if type_ is None or r["type"] == type_][:limit]
    return [_copy(item) for item in found]


def _copy(item: dict[str, Any]) -> dict[str, Any]:
    """A caller may change what it gets; the cache must not change with it."""
    return {
        **item,
        "aliases": list(item["aliases"]),
        "attributes": dict(item["attributes"]),
        "facts": list(item.get("facts", ())),
    }


async def entity_summary(connection: AsyncConnection, entity_id: str) -> dict[str, Any]:
    """Identity snapshot of an entity with its neighbours and DM-approved facts."""
    row = (await connection.execute(select(ENTITIES).where(ENTITIES.c.id == entity_id))).first()
    if row is None:
        matches = await find_entities(connection, NameIndex(), entity_id, None, limit=3)
        exact = [m for m in matches if m["name"].lower() == entity_id.strip().lower()]
        if len(exact) == 1:
            return await entity_summary(connection, exact[0]["id"])
        hint = f"; did you mean {', '.join(m['id'] for m in matches)}?" if matches else ""
        raise GlyphoxaError(f"no entity with id {entity_id!r}{hint}")
    summary = _public(row)
    outgoing = await _neighbours(connection, row.id, RELATIONS.c.target_id, RELATIONS.c.source_id)
    incoming = await _neighbours(connection, row.id, RELATIONS.c.source_id, RELATIONS.c.target_id)
    summary["relations"] = [
        {
            "direction": direction,
            "type": rel.type,
            "description": rel.description,
            "entity": {"id": rel.id, "name": rel.name, "type": rel.entity_type},
        }
        for direction, rels in (("out", outgoing), ("in", incoming))
        for rel in rels
    ]
    facts = (
        await connection.execute(
            select(FACTS.c.id, FACTS.c.npc, FACTS.c.text)
            .where(FACTS.c.entity_id == row.id, FACTS.c.status == "approved")
            .order_by(FACTS.c.id)
        )
    ).all()
    summary["facts"] = [{"id": f.id, "npc": f.npc, "text": f.text} for f in facts]
    return summary


async def _neighbours(
    connection: AsyncConnection, entity_id: str, other_end: Column[Any], this_end: Column[Any]
) -> Sequence[Any]:
    """Relations whose ``this_end`` is the entity, with the entity at ``other_end``."""
    return (
        await connection.execute(
            select(
                RELATIONS.c.type,
                RELATIONS.c.description,
                ENTITIES.c.id,
                ENTITIES.c.name,
                ENTITIES.c.type.label("entity_type"),
            )
            .join(ENTITIES, ENTITIES.c.id == other_end)
            .where(this_end == entity_id)
        )
    ).all()
