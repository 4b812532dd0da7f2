"""L1/L2 helpers on an open connection: folding utterances into chunks, reading transcripts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.memory.models import Chunk, Utterance
from campaigns.memory.summaries import TranscriptLine

__all__ = ["MAX_CHUNK", "MIN_CHUNK", "fold_chunk", "pending_count", "transcript_lines"]

UTTERANCES = Utterance.__table__
CHUNKS = Chunk.__table__
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
) -> int | None:
    """Fold up to ``size`` waiting utterances into a chunk; returns the chunk id that changed.

    On ``final`` (session end) a remainder shorter than 3 joins the previous chunk when that keeps
    it within 6 utterances, so chunks stay 3-6 utterances long wherever the session allows.
    """
    rows = (
        await connection.execute(
            select(UTTERANCES.c.id, UTTERANCES.c.speaker, UTTERANCES.c.text)
            .where(UTTERANCES.c.session_id == session_id, UTTERANCES.c.chunk_id.is_(None))
            .order_by(UTTERANCES.c.id)
            .limit(size)
        )
    ).all()
    if not rows or (len(rows) < size and not final):
        return None
    ids = [row.id for row in rows]
    if final and len(rows) < MIN_CHUNK:
        previous = (
            await connection.execute(
                select(CHUNKS.c.id, CHUNKS.c.text)
                .where(CHUNKS.c.session_id == session_id, CHUNKS.c.kind == "transcript")
                .order_by(CHUNKS.c.id.desc())
                .limit(1)
            )
        ).first()
        if previous is not None:
            members = (
                await connection.execute(
                    select(func.count()).where(UTTERANCES.c.chunk_id == previous.id)
                )
            ).scalar_one()
            if members + len(rows) <= MAX_CHUNK:
                await connection.execute(
                    update(CHUNKS)
                    .where(CHUNKS.c.id == previous.id)
                    .values(
                        text=previous.text + "\n" + _chunk_text(rows),
                        last_utterance_id=ids[-1],
                        embedding=None,
                        embedding_model=None,
                        embedded_at=None,
                    )
                )
                await _assign(connection, ids, previous.id)
                return int(previous.id)
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
    return int(chunk_id)


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
    return [(speaker, text) for speaker, text in rows.tuples()]
