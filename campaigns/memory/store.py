"""``MemoryStore``: the campaign memory every layer talks to (contract pinned by the lead).

One object per process over one async engine. Writes are short transactions that commit before
the call returns; embedding runs in background tasks this store owns and cancels on ``close``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import StaticPool

from campaigns.basics import GlyphoxaError
from campaigns.content import EntitiesFile
from campaigns.memory import backup, graph, proposals, records, transcripts
from campaigns.memory.characters import CharactersMixin
from campaigns.memory.database import OneConnection, create_engine, migrate, write_transaction
from campaigns.memory.embedding_jobs import EmbeddingJobs
from campaigns.memory.embeddings import Embedder
from campaigns.memory.models import Chunk, Session, Summary, Utterance, table_of
from campaigns.memory.records import tier_label
from campaigns.memory.search import VectorIndex, fulltext, hybrid
from campaigns.memory.summaries import ExtractiveSummarizer, Summarizer
from campaigns.memory.usage_records import UsageRecordsMixin

__all__ = ["MemoryStore"]

log = logging.getLogger(__name__)

SESSIONS = table_of(Session)
UTTERANCES = table_of(Utterance)
CHUNKS = table_of(Chunk)
SUMMARIES = table_of(Summary)


class MemoryStore(
    records.RecordsMixin, proposals.ProposalsMixin, CharactersMixin, UsageRecordsMixin
):
    """Transcripts (L1), semantic recall (L2), knowledge graph (L3) with the review queue of
    NPC-proposed facts, summaries, tool tables, the players' characters and what each session
    spent."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        embeddings: Embedder | None,
        summarizer: Summarizer | None,
        chunk_utterances: int,
    ) -> None:
        self._engine = engine
        self._embeddings = embeddings
        self._summarizer = summarizer
        self._chunk_size = chunk_utterances
        self._pending: dict[str, int] = {}
        self._vectors = VectorIndex()
        self._names = graph.NameIndex()
        self._jobs = EmbeddingJobs(embeddings, self._read, self._write)
        self._closed = False
        self._close_helpers = False
        shared = isinstance(engine.sync_engine.pool, StaticPool)
        self._one_connection = OneConnection() if shared else None

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        embeddings: Embedder | None = None,
        summarizer: Summarizer | None = None,
        chunk_utterances: int = 5,
        close_helpers: bool = False,
    ) -> MemoryStore:
        """Connect and bring the schema up to date (Alembic), creating the database if needed.

        ``close_helpers`` hands ``embeddings`` and ``summarizer`` to the store, which then closes
        them (their ``aclose``) in ``close``; by default they stay the caller's.
        """
        if not transcripts.MIN_CHUNK <= chunk_utterances <= transcripts.MAX_CHUNK:
            raise GlyphoxaError("memory.chunk_utterances must be between 3 and 6")
        engine = create_engine(url)
        try:
            await migrate(engine)
        except (OSError, DBAPIError) as error:
            await engine.dispose()
            raise GlyphoxaError(f"cannot open campaign memory at {_safe(url)}: {error}") from None
        except BaseException:
            await engine.dispose()
            raise
        store = cls(
            engine, embeddings=embeddings, summarizer=summarizer, chunk_utterances=chunk_utterances
        )
        store._close_helpers = close_helpers
        store._jobs.backfill_later()
        return store

    async def close(self, timeout_s: float = 10.0) -> None:
        """Let background embedding finish (up to ``timeout_s``), then release the database."""
        if self._closed:
            return
        self._closed = True
        await self._jobs.close(timeout_s)
        for helper in (self._embeddings, self._summarizer) if self._close_helpers else ():
            close = getattr(helper, "aclose", None)
            if close is not None:
                await close()
        await self._engine.dispose()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def summarizer(self) -> Summarizer | None:
        """Writes each session's summary when it ends (None: extractive only)."""
        return self._summarizer

    @property
    def embeddings(self) -> Embedder | None:
        """Embeds the transcript's chunks in the background (None: full-text search only)."""
        return self._embeddings

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    def _turn(self) -> contextlib.AbstractAsyncContextManager[None]:
        """This task's turn on a database that is one connection (else no wait)."""
        if self._one_connection is None:
            return contextlib.nullcontext()
        return self._one_connection.turn()

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._turn(), self._engine.connect() as connection:
                yield connection
        except _UNAVAILABLE as error:
            raise _unavailable(error) from error

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        try:  # an in-memory SQLite database is one connection: readers and writers take turns
            async with self._turn(), write_transaction(self._engine) as connection:
                yield connection
        except _UNAVAILABLE as error:
            raise _unavailable(error) from error

    async def check_writable(self) -> None:
        """Take the write lock and write, then roll back (``glyphoxa doctor``): proves the
        database accepts writes without leaving anything in the campaign's memory."""
        try:
            async with write_transaction(self._engine, commit=False) as connection:
                await connection.execute(text("CREATE TABLE glyphoxa_doctor_probe (x INTEGER)"))
                await connection.execute(text("INSERT INTO glyphoxa_doctor_probe VALUES (1)"))
        except _UNAVAILABLE as error:
            raise _unavailable(error) from error

    # ----------------------------------------------------------------- sessions and utterances
    async def start_session(self, campaign: str, title: str | None = None) -> str:
        session_id = uuid.uuid4().hex
        async with self._write() as conn:
            await conn.execute(
                insert(SESSIONS).values(
                    id=session_id, campaign=campaign, title=title, started_at=time.time()
                )
            )
        self._pending[session_id] = 0
        return session_id

    async def add_utterance(
        self,
        session_id: str,
        speaker: str,
        text: str,
        *,
        npc: str | None = None,
        started_at: float,
        ended_at: float,
        tier: str | None = None,
        interrupted: bool = False,
        stages: dict[str, float | None] | None = None,
    ) -> int:
        """Store one utterance; it is committed (durable) when this returns its id.
        ``stages``: an NPC line's turn latency by stage (milliseconds)."""
        changed: list[int] = []
        try:
            async with self._write() as conn:
                utterance_id = (
                    await conn.execute(
                        insert(UTTERANCES)
                        .values(
                            session_id=session_id,
                            speaker=speaker,
                            npc=npc,
                            text=text,
                            started_at=started_at,
                            ended_at=ended_at,
                            tier=tier_label(tier),
                            interrupted=interrupted,
                            stages=stages,
                        )
                        .returning(UTTERANCES.c.id)
                    )
                ).scalar_one()
                if session_id not in self._pending:
                    self._pending[session_id] = await transcripts.pending_count(conn, session_id)
                else:
                    self._pending[session_id] += 1
                if self._pending[session_id] >= self._chunk_size:
                    changed = await transcripts.fold_chunk(
                        conn, session_id, self._chunk_size, final=False, now=time.time()
                    )
        except IntegrityError:
            self._pending.pop(session_id, None)
            raise GlyphoxaError(f"unknown session {session_id!r}") from None
        except BaseException:
            self._pending.pop(session_id, None)  # recount from the database next time
            raise
        if changed:
            self._pending[session_id] = max(0, self._pending[session_id] - self._chunk_size)
            self._embed_later(changed)
        return int(utterance_id)

    async def end_session(
        self, session_id: str, summary: str | None = None, *, bookmarks: Sequence[str] = ()
    ) -> None:
        """Close a session: fold the last chunk, write its summary (LLM, else extractive),
        followed by the moments the DM bookmarked."""
        session_id = await self.resolve_session(session_id)
        changed: list[int] = []
        async with self._write() as conn:
            while folded := await transcripts.fold_chunk(
                conn, session_id, self._chunk_size, final=True, now=time.time()
            ):
                changed.extend(folded)
            lines = await transcripts.transcript_lines(conn, session_id)
        self._pending.pop(session_id, None)
        self._embed_later(changed)
        source = "dm"
        if summary is None:
            summary, source = await self._summarize(lines)
        if bookmarks:
            marked = "\n".join(f"- {mark}" for mark in bookmarks)
            summary = f"{summary}\n\nBookmarks:\n{marked}"
        async with self._write() as conn:
            await conn.execute(SUMMARIES.delete().where(SUMMARIES.c.session_id == session_id))
            await conn.execute(
                insert(SUMMARIES).values(
                    session_id=session_id, text=summary, source=source, created_at=time.time()
                )
            )
            await conn.execute(
                update(SESSIONS).where(SESSIONS.c.id == session_id).values(ended_at=time.time())
            )

    async def _summarize(self, lines: list[tuple[str, str]]) -> tuple[str, str]:
        if self._summarizer is not None and lines:
            try:
                return await self._summarizer.summarize(lines), self._summarizer.source
            except Exception as error:  # any LLM failure: the session still gets a summary
                log.warning("LLM session summary failed (%s); using the extractive one", error)
        fallback = ExtractiveSummarizer()
        return fallback.summarize_sync(lines), fallback.source

    async def resolve_session(self, session_id: str) -> str:
        """Full id of a session given its id or a unique prefix (the CLI shows 8 characters)."""
        async with self._read() as conn:
            ids = (
                (
                    await conn.execute(
                        select(SESSIONS.c.id).where(SESSIONS.c.id.startswith(session_id)).limit(2)
                    )
                )
                .scalars()
                .all()
            )
        if len(ids) == 1 and session_id:
            return str(ids[0])
        if not ids or not session_id:
            raise GlyphoxaError(f"unknown session {session_id!r}; see `glyphoxa memory sessions`")
        raise GlyphoxaError(f"session id {session_id!r} is ambiguous; give more characters")

    # ------------------------------------------------------------------------------ search
    async def search_sessions(
        self, query: str, session_id: str | None = None, limit: int = 10
    ) -> list[dict[str, Any]]:
        """Utterances matching ``query`` by full text (BM25 / ts_rank), best first."""
        async with self._read() as conn:
            return await fulltext(conn, "utterances", query, limit=limit, session_id=session_id)

    async def search_facts(self, query: str, top_k: int = 10) -> list[dict[str, Any]]:
        """Chunks and approved facts for ``query``: hybrid when embeddings exist, else full text."""
        async with self._read() as conn:
            return await hybrid(
                conn, query, top_k, embeddings=self._embeddings, vectors=self._vectors
            )

    async def search_history(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Session summaries matching ``query`` (the campaign's long-term history)."""
        async with self._read() as conn:
            hits = await fulltext(conn, "summaries", query, limit=limit)
            if not hits:
                return []
            sessions = {
                row.id: row
                for row in await conn.execute(
                    select(SESSIONS).where(SESSIONS.c.id.in_([h["session_id"] for h in hits]))
                )
            }
        return [
            {
                "session_id": hit["session_id"],
                "title": sessions[hit["session_id"]].title,
                "started_at": sessions[hit["session_id"]].started_at,
                "summary": hit["text"],
                "score": hit["score"],
            }
            for hit in hits
        ]

    # ---------------------------------------------------------------------- knowledge graph
    async def seed_entities(self, entities: EntitiesFile) -> tuple[int, int]:
        """Insert/update entities and add missing relations from an ``entities.yaml`` model."""
        try:
            async with self._write() as conn:
                return await graph.seed(conn, entities)
        finally:
            self._names.invalidate()

    async def index_entities(self) -> int:
        """Keep a searchable ``entity`` chunk of every described entity (a database seeded
        before such chunks existed gets them here); returns how many were added or updated."""
        async with self._write() as conn:
            return await graph.index_entities(conn)

    async def query_entities(
        self, name: str | None = None, type: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        """Entities by fuzzy name or alias and/or type, best match first (at most ``limit``)."""
        async with self._read() as conn:
            return await graph.find_entities(conn, self._names, name, type, limit)

    async def get_summary(self, entity_id: str) -> dict[str, Any]:
        async with self._read() as conn:
            return await graph.entity_summary(conn, entity_id)

    # -------------------------------------------------------------------------------- backup
    async def export_json(self, path: str | Path) -> dict[str, int]:
        """Write a JSON backup of every table; returns row counts per table."""
        async with self._turn():
            return await backup.export_memory(self._engine, Path(path))

    async def import_json(self, path: str | Path) -> backup.ImportReport:
        """Merge a JSON backup in one transaction; a bad file raises and changes nothing."""
        async with self._turn():
            report = await backup.import_memory(self._engine, Path(path))
        self._pending.clear()
        self._names.invalidate()
        self._jobs.backfill_later()
        return report

    # ----------------------------------------------------------------------------- embedding
    def _embed_later(self, chunk_ids: list[int]) -> None:
        self._jobs.schedule(chunk_ids)

    async def backfill_embeddings(self, batch: int = 64) -> int:
        """Embed every chunk that has no vector yet (e.g. the endpoint was down); returns count."""
        return await self._jobs.backfill(batch)

    async def wait_idle(self) -> None:
        """Wait until background embedding is done (tests, CLI import, shutdown)."""
        await self._jobs.wait_idle()

    async def count(self, table: str) -> int:
        """Rows in one of the memory tables (status and tests)."""
        model = {"utterances": UTTERANCES, "chunks": CHUNKS, "sessions": SESSIONS}.get(table)
        if model is None:
            raise GlyphoxaError(f"unknown table {table!r}")
        async with self._read() as conn:
            return int((await conn.execute(select(func.count()).select_from(model))).scalar_one())


#: Failures of the database itself (server down, disk full, lock timeout), not of our data.
_UNAVAILABLE = (OperationalError, InterfaceError, OSError)


def _unavailable(error: BaseException) -> GlyphoxaError:
    detail = getattr(error, "orig", None) or error
    return GlyphoxaError(f"campaign memory is unavailable: {detail}")


def _safe(url: str) -> str:
    """A URL fit for an error message: the password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<invalid url>"
