"""The review queue of facts NPCs propose: propose, list, approve (as proposed or edited), reject.

An NPC's proposal (``propose_memory``) names one entity of the knowledge graph and a short fact;
it waits as ``pending`` until the DM decides. Only an approved fact joins the campaign's facts:
a ``fact`` chunk for ``search_facts``, the entity's ``get_summary`` and the entity rows that
name lookups (and so the NPCs' prompts) read. A rejected fact stays in the table as a record of
the decision and is never shown to an NPC. Mixed into ``MemoryStore``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, insert, select, update

from campaigns.basics import GlyphoxaError
from campaigns.memory import graph
from campaigns.memory.models import Chunk, Entity, ProposedFact, table_of

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["MAX_FACT_CHARS", "MAX_PENDING_PER_NPC", "ProposalsMixin"]

FACTS = table_of(ProposedFact)
CHUNKS = table_of(Chunk)
ENTITIES = table_of(Entity)

#: Longest fact text, proposed or edited: one or two sentences a prompt can carry.
MAX_FACT_CHARS = 300
#: Proposals one NPC may have waiting in one session; more is a model stuck in a loop.
MAX_PENDING_PER_NPC = 20


def _clean_text(text: str) -> str:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise GlyphoxaError("a fact needs some text")
    if len(cleaned) > MAX_FACT_CHARS:
        raise GlyphoxaError(
            f"the fact is {len(cleaned)} characters long; at most {MAX_FACT_CHARS} fit "
            "(one or two sentences)"
        )
    return cleaned


def _fact_id(fact_id: object) -> int:
    """A proposal number as the DM typed it (``7`` or ``#7``); anything else is refused."""
    text = str(fact_id).strip().removeprefix("#")
    if not text.isdigit() or int(text) < 1:
        raise GlyphoxaError(
            f"{fact_id!r} is not a proposal number; use the number shown by "
            "`glyphoxa memory proposals`, e.g. 7"
        )
    return int(text)


class ProposalsMixin:
    if TYPE_CHECKING:
        _names: graph.NameIndex

        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _write(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _embed_later(self, chunk_ids: list[int]) -> None: ...

    async def resolve_entity(self, wanted: str) -> dict[str, Any]:
        """The one entity ``wanted`` names: its id, an exact name or alias, or a spelling that
        matches a single entity. Unknown or ambiguous names are refused with the candidates."""
        wanted = wanted.strip()
        if not wanted:
            raise GlyphoxaError("name the entity the fact is about")
        async with self._read() as conn:
            found = await graph.find_entities(conn, self._names, wanted, None, limit=6)
        lowered = wanted.lower()
        exact = [
            e
            for e in found
            if e["id"] == wanted or lowered in (n.lower() for n in (e["name"], *e["aliases"]))
        ]
        if len(exact) == 1 or (not exact and len(found) == 1):
            return (exact or found)[0]
        if not found:
            raise GlyphoxaError(
                f"no entity named {wanted!r} in the campaign; facts can only be proposed about "
                "known entities (query_entities lists them)"
            )
        options = ", ".join(f"{e['name']} ({e['id']})" for e in (exact or found)[:5])
        raise GlyphoxaError(f"{wanted!r} could be {options}; give the entity's id")

    async def propose_fact(
        self,
        npc: str,
        text: str,
        *,
        entity_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Queue knowledge an NPC wants to add; it stays pending until the DM approves it.

        The same fact about the same entity, already waiting or approved, is not queued twice:
        its number is returned instead.
        """
        text = _clean_text(text)
        async with self._write() as conn:
            if entity_id is not None:
                exists = await conn.execute(select(ENTITIES.c.id).where(ENTITIES.c.id == entity_id))
                if exists.first() is None:
                    raise GlyphoxaError(f"no entity with id {entity_id!r}")
            same = await conn.execute(
                select(FACTS.c.id).where(
                    FACTS.c.entity_id == entity_id if entity_id else FACTS.c.entity_id.is_(None),
                    func.lower(FACTS.c.text) == text.lower(),
                    FACTS.c.status.in_(("pending", "approved")),
                )
            )
            duplicate = same.scalar()
            if duplicate is not None:
                return int(duplicate)
            waiting = await conn.execute(
                select(func.count()).where(
                    FACTS.c.npc == npc,
                    FACTS.c.status == "pending",
                    FACTS.c.session_id == session_id
                    if session_id
                    else FACTS.c.session_id.is_(None),
                )
            )
            if int(waiting.scalar_one()) >= MAX_PENDING_PER_NPC:
                raise GlyphoxaError(
                    f"{npc} already has {MAX_PENDING_PER_NPC} proposals waiting for the DM; "
                    "propose no more this session"
                )
            inserted = await conn.execute(
                insert(FACTS)
                .values(
                    npc=npc,
                    text=text,
                    entity_id=entity_id,
                    session_id=session_id,
                    status="pending",
                    proposed_at=time.time(),
                )
                .returning(FACTS.c.id)
            )
            return int(inserted.scalar_one())

    async def list_facts(self, status: str | None = "pending") -> list[dict[str, Any]]:
        """Proposals in the order they came (``status`` None: every one), each with the name of
        the entity it is about (``entity_name``)."""
        query = (
            select(FACTS, ENTITIES.c.name.label("entity_name"))
            .outerjoin(ENTITIES, ENTITIES.c.id == FACTS.c.entity_id)
            .order_by(FACTS.c.id)
        )
        if status is not None:
            query = query.where(FACTS.c.status == status)
        async with self._read() as conn:
            return [dict(row._mapping) for row in await conn.execute(query)]

    async def get_fact(self, fact_id: int | str) -> dict[str, Any]:
        """One proposal by number; an unknown number is refused."""
        number = _fact_id(fact_id)
        query = (
            select(FACTS, ENTITIES.c.name.label("entity_name"))
            .outerjoin(ENTITIES, ENTITIES.c.id == FACTS.c.entity_id)
            .where(FACTS.c.id == number)
        )
        async with self._read() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            raise GlyphoxaError(_unknown(number))
        return dict(row._mapping)

    async def approve_fact(
        self, fact_id: int | str, text: str | None = None, *, by: str | None = None
    ) -> dict[str, Any]:
        """Accept a pending fact, as proposed or with the DM's ``text``: it joins the entity's
        summary, its lookups and ``search_facts``. Returns the approved proposal."""
        number = _fact_id(fact_id)
        edited = _clean_text(text) if text is not None else None
        async with self._write() as conn:
            fact = await _pending_fact(conn, number)
            final = edited if edited is not None else fact.text
            label = ""
            if fact.entity_id is not None:
                name = await conn.execute(
                    select(ENTITIES.c.name).where(ENTITIES.c.id == fact.entity_id)
                )
                label = f"{name.scalar_one_or_none() or fact.entity_id}: "
            now = time.time()
            changes: dict[str, Any] = {"status": "approved", "decided_at": now, "decided_by": by}
            if edited is not None and edited != fact.text:
                changes.update(text=edited, original_text=fact.text)
            await conn.execute(update(FACTS).where(FACTS.c.id == number).values(**changes))
            chunk_id = (
                await conn.execute(
                    insert(CHUNKS)
                    .values(
                        kind="fact",
                        session_id=None,
                        entity_id=fact.entity_id,
                        text=label + final,
                        created_at=now,
                    )
                    .returning(CHUNKS.c.id)
                )
            ).scalar_one()
        self._names.invalidate()
        self._embed_later([int(chunk_id)])
        return await self.get_fact(number)

    async def reject_fact(self, fact_id: int | str, *, by: str | None = None) -> dict[str, Any]:
        """Refuse a pending fact: no NPC ever sees it. Returns the rejected proposal."""
        number = _fact_id(fact_id)
        async with self._write() as conn:
            await _pending_fact(conn, number)
            await conn.execute(
                update(FACTS)
                .where(and_(FACTS.c.id == number, FACTS.c.status == "pending"))
                .values(status="rejected", decided_at=time.time(), decided_by=by)
            )
        return await self.get_fact(number)


def _unknown(number: int) -> str:
    return f"no proposal #{number}; `glyphoxa memory proposals` lists the waiting ones"


async def _pending_fact(conn: AsyncConnection, number: int) -> Any:
    fact = (await conn.execute(select(FACTS).where(FACTS.c.id == number))).first()
    if fact is None:
        raise GlyphoxaError(_unknown(number))
    if fact.status != "pending":
        raise GlyphoxaError(
            f"proposal #{number} was already {fact.status}; only a waiting proposal can be "
            "approved, edited or rejected"
        )
    return fact
