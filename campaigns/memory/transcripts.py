"""L1/L2 helpers on an open connection: folding utterances into chunks, reading transcripts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.memory.models import Chunk, Utterance, table_of
from campaigns.memory.summaries import TranscriptLine

__all__ = ["MAX_CHUNK", "MIN_CHUNK", "fold_chunk", "pending_count", "transcript_lines"]

UTTERANCES = table_of(Utterance)
CHUNKS = table_of(Chunk)
MIN_CHUNK = 3
MAX_CHUNK = 6


def _chunk_text(rows: list[Any]) -> str:
    return "\n".join(f"{row.speaker}: {row.text}" for row in rows)


async def pending_count(connection: AsyncConnection, session_id: str) -> int:
    """Utterances of a session not yet folded into a chunk."""
    query = select(func.count()).where(
        UTTERANCES.c.session_id == session_id, UTTERANCES.c.chunk_id.is_(None)
    )
    return int((await connection.execute(query)).scalar_one())


async def fold_chunk(
    connection: AsyncConnection, session_id: str, size: int, *, final: bool, now: float
) -> list[int]:
    """Fold up to ``size`` waiting utterances into a chunk; returns the chunk ids that changed.

    On ``final`` (session end) a remainder shorter than 3 joins the previous chunk when that keeps
    it within 6 utterances, or else takes the previous chunk's last lines to make 3, so chunks stay
    3-6 utterances long wherever the session has at least 3.
    """
    rows = await _waiting(connection, session_id, size)
    if not rows or (len(rows) < size and not final):
        return []
    changed: list[int] = []
    if final and len(rows) < MIN_CHUNK:
        previous = (
            await connection.execute(
                select(CHUNKS.c.id)
                .where(CHUNKS.c.session_id == session_id, CHUNKS.c.kind == "transcript")
                .order_by(CHUNKS.c.id.desc())
                .limit(1)
            )
        ).scalar()
        if previous is not None:
            members = await _members(connection, previous)
            if len(members) + len(rows) <= MAX_CHUNK:
                await _assign(connection, [row.id for row in rows], previous)
                await _rewrite(connection, previous, [*members, *rows])
                return [previous]
            # Lend the previous chunk's last lines so the remainder reaches 3.
            lent = members[len(members) - (MIN_CHUNK - len(rows)) :]
            await connection.execute(
                update(UTTERANCES)
                .where(UTTERANCES.c.id.in_([row.id for row in lent]))
                .values(chunk_id=None)
            )
            await _rewrite(connection, previous, members[: len(members) - len(lent)])
            changed.append(previous)
            rows = await _waiting(connection, session_id, size)
    ids = [row.id for row in rows]
    chunk_id = (
        await connection.execute(
            insert(CHUNKS)
            .values(
                kind="transcript",
                session_id=session_id,
                first_utterance_id=ids[0],
                last_utterance_id=ids[-1],
                text=_chunk_text(rows),
                created_at=now,
            )
            .returning(CHUNKS.c.id)
        )
    ).scalar_one()
    await _assign(connection, ids, chunk_id)
    return [*changed, int(chunk_id)]


async def _waiting(connection: AsyncConnection, session_id: str, size: int) -> list[Any]:
    return list(
        await connection.execute(
            select(UTTERANCES.c.id, UTTERANCES.c.speaker, UTTERANCES.c.text)
            .where(UTTERANCES.c.session_id == session_id, UTTERANCES.c.chunk_id.is_(None))
            .order_by(UTTERANCES.c.id)
            .limit(size)
        )
    )


async def _members(connection: AsyncConnection, chunk_id: int) -> list[Any]:
    return list(
        await connection.execute(
            select(UTTERANCES.c.id, UTTERANCES.c.speaker, UTTERANCES.c.text)
            .where(UTTERANCES.c.chunk_id == chunk_id)
            .order_by(UTTERANCES.c.id)
        )
    )


async def _rewrite(connection: AsyncConnection, chunk_id: int, rows: list[Any]) -> None:
    """New text and bounds for a chunk whose members changed; its old vector is void."""
    await connection.execute(
        update(CHUNKS)
        .where(CHUNKS.c.id == chunk_id)
        .values(
            text=_chunk_text(rows),
            first_utterance_id=rows[0].id,
            last_utterance_id=rows[-1].id,
            embedding=None,
            embedding_model=None,
            embedded_at=None,
        )
    )


async def _assign(connection: AsyncConnection, ids: list[int], chunk_id: int) -> None:
    await connection.execute(
        update(UTTERANCES).where(UTTERANCES.c.id.in_(ids)).values(chunk_id=chunk_id)
    )


async def transcript_lines(connection: AsyncConnection, session_id: str) -> list[TranscriptLine]:
    rows = await connection.execute(
        select(UTTERANCES.c.speaker, UTTERANCES.c.text)
        .where(UTTERANCES.c.session_id == session_id)
        .order_by(UTTERANCES.c.started_at, UTTERANCES.c.id)
    )
    return [(speaker, text) for speaker, text in rows]
