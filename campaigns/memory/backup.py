"""JSON backup of the whole memory: export, and import that validates before it writes.

Import merges into the target database in one transaction: sessions already present (same id) are
skipped, row ids are re-assigned (so a SQLite export restores into a PostgreSQL database that has
its own rows), entities and calibration windows from the file win. A file that fails validation or
any write error changes nothing. The file format and its validation live in ``backup_format``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from campaigns.basics import GlyphoxaError
from campaigns.memory.backup_format import FORMAT, VERSION, ChunkRow, Tables, load_backup
from campaigns.memory.database import write_transaction
from campaigns.memory.graph import search_names
from campaigns.memory.models import (
    CharacterBinding,
    Chunk,
    Entity,
    ProposedFact,
    Relation,
    Session,
    Summary,
    ToolCalibration,
    ToolInvocation,
    Utterance,
    table_of,
)

__all__ = ["FORMAT", "VERSION", "ImportReport", "export_memory", "import_memory"]

log = logging.getLogger(__name__)

T = {
    model.__tablename__: table_of(model)
    for model in (
        Session, Utterance, Chunk, Entity, Relation, ProposedFact, Summary, ToolInvocation,
        ToolCalibration, CharacterBinding,
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ImportReport:
    sessions_added: int
    sessions_skipped: int
    utterances: int
    chunks: int
    entities: int
    relations: int
    facts: int
    tool_invocations: int
    calibrations: int
    characters: int = 0

    def describe(self) -> str:
        return ", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in asdict(self).items())


async def export_memory(engine: AsyncEngine, path: Path) -> dict[str, int]:
    """Write every table to ``path`` (atomically: a temp file renamed over it); returns counts."""
    tables: dict[str, list[dict[str, Any]]] = {}
    async with engine.connect() as conn:
        for name, fields in Tables.model_fields.items():
            row_model = fields.annotation.__args__[0]  # type: ignore[union-attr]
            table = T[name]
            columns = [table.c[c] for c in row_model.model_fields]
            order = table.c.id if "id" in table.c else columns[0]
            rows = (await conn.execute(select(*columns).order_by(order))).mappings().all()
            tables[name] = [_encode(dict(row)) for row in rows]
    document = {"format": FORMAT, "version": VERSION, "exported_at": time.time(), "tables": tables}
    await asyncio.to_thread(_write_json, path, document)
    return {name: len(rows) for name, rows in tables.items()}


def _write_json(path: Path, document: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            json.dump(document, handle, ensure_ascii=False)
        temporary.replace(path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise GlyphoxaError(f"cannot write backup {path}: {error.strerror or error}") from None


def _encode(row: dict[str, Any]) -> dict[str, Any]:
    if isinstance(row.get("embedding"), bytes | memoryview):
        row["embedding"] = base64.b64encode(bytes(row["embedding"])).decode("ascii")
    return row


async def import_memory(engine: AsyncEngine, path: Path) -> ImportReport:
    """Validate ``path`` completely, then merge it in one transaction (all or nothing)."""
    backup = await asyncio.to_thread(load_backup, path)
    try:
        async with write_transaction(engine) as conn:
            return await _merge(conn, path, backup.tables)
    except SQLAlchemyError as error:
        raise GlyphoxaError(
            f"{path}: import failed, nothing was changed: {getattr(error, 'orig', error)}"
        ) from None


async def _merge(conn: AsyncConnection, path: Path, tables: Tables) -> ImportReport:
    now = time.time()
    entity_ids = set((await conn.execute(select(T["entities"].c.id))).scalars())
    for row in tables.entities:
        values = row.model_dump()
        values["search_names"] = search_names(row.name, row.aliases)
        values["updated_at"] = now
        if row.id in entity_ids:
            entities = T["entities"]
            await conn.execute(update(entities).where(entities.c.id == row.id).values(**values))
        else:
            await conn.execute(insert(T["entities"]).values(**values))
            entity_ids.add(row.id)
    relations = T["relations"]
    triples = select(relations.c.source_id, relations.c.type, relations.c.target_id)
    present: set[tuple[str, str, str]] = {(a, b, c) for a, b, c in await conn.execute(triples)}
    new_relations = []
    for i, rel in enumerate(tables.relations):
        for end in (rel.source_id, rel.target_id):
            if end not in entity_ids:
                raise GlyphoxaError(
                    f"{path}: invalid backup: tables.relations[{i}] names unknown entity {end!r}"
                )
        key = (rel.source_id, rel.type, rel.target_id)
        if key not in present:
            present.add(key)
            new_relations.append(rel.model_dump())
    if new_relations:
        await conn.execute(insert(relations), new_relations)

    existing_sessions = set((await conn.execute(select(T["sessions"].c.id))).scalars())
    fresh = {s.id for s in tables.sessions if s.id not in existing_sessions}
    if fresh:
        await conn.execute(
            insert(T["sessions"]), [s.model_dump() for s in tables.sessions if s.id in fresh]
        )
    utterances = [u for u in tables.utterances if u.session_id in fresh]
    utterance_ids = await _insert_remapped(
        conn, "utterances", [u.model_dump(exclude={"id", "chunk_id"}) for u in utterances],
        [u.id for u in utterances],
    )  # fmt: skip
    chunk_rows = [c for c in tables.chunks if c.session_id in fresh]
    fact_chunks = await _new_fact_chunks(conn, tables.chunks)
    chunk_rows += fact_chunks
    chunk_values = []
    for c in chunk_rows:
        values = c.model_dump(exclude={"id"})
        values["first_utterance_id"] = utterance_ids.get(c.first_utterance_id or -1)
        values["last_utterance_id"] = utterance_ids.get(c.last_utterance_id or -1)
        values["embedding"] = base64.b64decode(c.embedding) if c.embedding else None
        chunk_values.append(values)
    chunk_ids = await _insert_remapped(conn, "chunks", chunk_values, [c.id for c in chunk_rows])
    links = [
        {"uid": utterance_ids[u.id], "cid": chunk_ids[u.chunk_id]}
        for u in utterances
        if u.chunk_id is not None and u.chunk_id in chunk_ids
    ]
    if links:
        table = T["utterances"]
        await conn.execute(
            update(table).where(table.c.id == bindparam("uid")).values(chunk_id=bindparam("cid")),
            links,
        )
    summaries = [s.model_dump() for s in tables.summaries if s.session_id in fresh]
    if summaries:
        await conn.execute(insert(T["summaries"]), summaries)

    facts = T["proposed_facts"]
    known_facts = set(await conn.execute(select(facts.c.npc, facts.c.text, facts.c.proposed_at)))
    new_facts = [
        f.model_dump(exclude={"id"})
        for f in tables.proposed_facts
        if (f.npc, f.text, f.proposed_at) not in known_facts
    ]
    if new_facts:
        await conn.execute(insert(facts), new_facts)
    calls = T["tool_invocations"]
    known_calls = set(await conn.execute(select(calls.c.npc, calls.c.tool, calls.c.created_at)))
    new_calls = [
        c.model_dump()
        for c in tables.tool_invocations
        if (c.npc, c.tool, c.created_at) not in known_calls
    ]
    if new_calls:
        await conn.execute(insert(calls), new_calls)
    calibration = T["tool_calibration"]
    for cal in tables.tool_calibration:
        await conn.execute(
            calibration.delete().where(
                calibration.c.environment == cal.environment, calibration.c.tool == cal.tool
            )
        )
        values = cal.model_dump()
        values["samples"] = [[ms, ok] for ms, ok in cal.samples]
        await conn.execute(insert(calibration).values(**values))
    characters = await _merge_bindings(conn, tables)
    report = ImportReport(
        sessions_added=len(fresh),
        sessions_skipped=len(tables.sessions) - len(fresh),
        utterances=len(utterance_ids),
        chunks=len(chunk_ids),
        entities=len(tables.entities),
        relations=len(new_relations),
        facts=len(new_facts),
        tool_invocations=len(new_calls),
        calibrations=len(tables.tool_calibration),
        characters=characters,
    )
    log.info("imported %s: %s", path, report.describe())
    return report


async def _merge_bindings(conn: AsyncConnection, tables: Tables) -> int:
    """Character bindings: per campaign and player, the newer binding wins; returns how many
    rows of the file were written."""
    bindings = T["character_bindings"]
    held = {
        (campaign, user_id): updated_at
        for campaign, user_id, updated_at in await conn.execute(
            select(bindings.c.campaign, bindings.c.user_id, bindings.c.updated_at)
        )
    }
    written = 0
    for row in tables.character_bindings:
        key = (row.campaign, row.user_id)
        if key in held and held[key] >= row.updated_at:
            continue
        await conn.execute(
            bindings.delete().where(
                bindings.c.campaign == row.campaign, bindings.c.user_id == row.user_id
            )
        )
        await conn.execute(insert(bindings).values(**row.model_dump()))
        held[key] = row.updated_at
        written += 1
    return written


async def _new_fact_chunks(conn: AsyncConnection, chunks: list[ChunkRow]) -> list[ChunkRow]:
    """Approved-fact chunks (no session) not already present (same text and time), and the
    described entities' chunks of entities that have none here yet."""
    table = T["chunks"]
    rows = await conn.execute(
        select(table.c.kind, table.c.entity_id, table.c.text, table.c.created_at).where(
            table.c.session_id.is_(None)
        )
    )
    known: set[tuple[str, float]] = set()
    described: set[str | None] = set()
    for row in rows:
        known.add((row.text, row.created_at))
        if row.kind == "entity":
            described.add(row.entity_id)
    return [
        c
        for c in chunks
        if c.session_id is None
        and (c.text, c.created_at) not in known
        and not (c.kind == "entity" and c.entity_id in described)
    ]


async def _insert_remapped(
    conn: AsyncConnection, name: str, rows: list[dict[str, Any]], old_ids: list[int]
) -> dict[int, int]:
    """Insert rows letting the database assign ids; returns old id -> new id."""
    if not rows:
        return {}
    table = T[name]
    result = await conn.execute(
        insert(table).returning(table.c.id, sort_by_parameter_order=True), rows
    )
    new_ids = list(result.scalars())
    return dict(zip(old_ids, new_ids, strict=True))
