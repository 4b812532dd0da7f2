"""L3 knowledge graph: entities with attributes and typed relations, seeded from entities.yaml.

Lookup is fuzzy: exact name or alias first, then substring, then close spellings (speech-to-text
writes "Bartock" for "Bartok"), so an NPC's tool call finds the entity the player meant.
"""

from __future__ import annotations

import difflib
import time
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.content import ENTITY_TYPES, EntitiesFile
from campaigns.errors import GlyphoxaError
from campaigns.memory.models import Entity, ProposedFact, Relation

__all__ = ["entity_summary", "find_entities", "search_names", "seed"]

ENTITIES = Entity.__table__
RELATIONS = Relation.__table__
FACTS = ProposedFact.__table__
_FUZZY_CUTOFF = 0.75


def search_names(name: str, aliases: list[str]) -> str:
    """The ``search_names`` column: ``|name|alias|...|`` lower-cased, for LIKE and exact match."""
    return "|" + "|".join(n.strip().lower() for n in [name, *aliases] if n.strip()) + "|"


async def seed(connection: AsyncConnection, entities: EntitiesFile) -> tuple[int, int]:
    """Insert or update entities and add missing relations; returns (entities, new relations).

    Relations may point at entities already in the database. An unknown endpoint is refused before
    anything is written.
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
    triples = select(RELATIONS.c.source_id, RELATIONS.c.type, RELATIONS.c.target_id)
    present = set((await connection.execute(triples)).all())
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


def _public(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "type": row.type,
        "description": row.description,
        "aliases": list(row.aliases or []),
        "attributes": dict(row.attributes or {}),
    }


async def find_entities(
    connection: AsyncConnection, name: str | None, type_: str | None, limit: int = 20
) -> list[dict[str, Any]]:
    """Entities matching ``name`` (exact, substring, then fuzzy) and/or ``type``, best first."""
    if type_ is not None and type_ not in ENTITY_TYPES:
        raise GlyphoxaError(f"unknown entity type {type_!r}; choose from {', '.join(ENTITY_TYPES)}")
    names = ("id", "name", "type", "description", "aliases", "attributes")
    columns = [ENTITIES.c[c] for c in names]
    base = select(*columns)
    if type_ is not None:
        base = base.where(ENTITIES.c.type == type_)
    wanted = (name or "").strip().lower()
    if not wanted:
        rows = (await connection.execute(base.order_by(ENTITIES.c.name).limit(limit))).all()
        return [_public(r) for r in rows]
    pattern = "%" + wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = (
        await connection.execute(
            base.add_columns(ENTITIES.c.search_names)
            .where(or_(ENTITIES.c.search_names.like(pattern, escape="\\"), ENTITIES.c.id == wanted))
            .limit(limit * 5)
        )
    ).all()
    if rows:

        def rank(row: Any) -> tuple[int, str]:
            names = row.search_names.strip("|").split("|")
            if wanted in names or row.id == wanted:
                return (0, row.name)
            if any(n.startswith(wanted) for n in names):
                return (1, row.name)
            return (2, row.name)

        return [_public(r) for r in sorted(rows, key=rank)[:limit]]
    # Close spellings: compare against each name/alias and each of their words.
    candidates = (
        await connection.execute(
            select(ENTITIES.c.id, ENTITIES.c.search_names).where(
                ENTITIES.c.type == type_ if type_ is not None else ENTITIES.c.id.is_not(None)
            )
        )
    ).all()
    scores: dict[str, float] = {}
    for entity_id, names in candidates:
        for candidate in names.strip("|").split("|"):
            for form in (candidate, *candidate.split()):
                ratio = difflib.SequenceMatcher(None, wanted, form).ratio()
                if ratio >= _FUZZY_CUTOFF and ratio > scores.get(entity_id, 0.0):
                    scores[entity_id] = ratio
    if not scores:
        return []
    best = sorted(scores, key=lambda i: -scores[i])[:limit]
    rows = (await connection.execute(base.where(ENTITIES.c.id.in_(best)))).all()
    by_id = {r.id: r for r in rows}
    return [_public(by_id[i]) for i in best if i in by_id]


async def entity_summary(connection: AsyncConnection, entity_id: str) -> dict[str, Any]:
    """Identity snapshot of an entity with its neighbours and DM-approved facts."""
    row = (await connection.execute(select(ENTITIES).where(ENTITIES.c.id == entity_id))).first()
    if row is None:
        matches = await find_entities(connection, entity_id, None, limit=3)
        exact = [m for m in matches if m["name"].lower() == entity_id.strip().lower()]
        if len(exact) == 1:
            return await entity_summary(connection, exact[0]["id"])
        hint = f"; did you mean {', '.join(m['id'] for m in matches)}?" if matches else ""
        raise GlyphoxaError(f"no entity with id {entity_id!r}{hint}")
    summary = _public(row)
    outgoing = (
        await connection.execute(
            select(
                RELATIONS.c.type,
                RELATIONS.c.description,
                ENTITIES.c.id,
                ENTITIES.c.name,
                ENTITIES.c.type.label("entity_type"),
            )
            .join(ENTITIES, ENTITIES.c.id == RELATIONS.c.target_id)
            .where(RELATIONS.c.source_id == row.id)
        )
    ).all()
    incoming = (
        await connection.execute(
            select(
                RELATIONS.c.type,
                RELATIONS.c.description,
                ENTITIES.c.id,
                ENTITIES.c.name,
                ENTITIES.c.type.label("entity_type"),
            )
            .join(ENTITIES, ENTITIES.c.id == RELATIONS.c.source_id)
            .where(RELATIONS.c.target_id == row.id)
        )
    ).all()
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
