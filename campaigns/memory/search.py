"""Full-text and hybrid search.

SQLite ranks with FTS5's BM25 (``bm25()``); PostgreSQL with ``ts_rank`` over a generated
``tsvector`` column and a GIN index. Query words are OR-ed (stop words dropped) so a question
phrased in speech still finds the line that shares its key words; the ranking puts lines sharing
more of them first. ``hybrid`` fuses full-text ranks with cosine-similarity ranks by reciprocal rank
fusion when chunk embeddings exist.
"""

from __future__ import annotations

import logging
import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.memory.models import Chunk, table_of

if TYPE_CHECKING:
    from campaigns.memory.embeddings import Embedder

__all__ = [
    "FULLTEXT_TABLES",
    "VectorIndex",
    "fulltext",
    "hybrid",
    "query_terms",
    "reciprocal_rank_fusion",
]

log = logging.getLogger(__name__)

#: Columns returned per searchable table (aliased ``t``).
FULLTEXT_TABLES: dict[str, str] = {
    "utterances": (
        "t.id, t.session_id, t.speaker, t.npc, t.text, t.started_at, t.ended_at, t.tier, "
        "t.interrupted"
    ),
    "chunks": "t.id, t.kind, t.session_id, t.entity_id, t.text, t.created_at",
    "summaries": "t.id, t.session_id, t.text, t.source, t.created_at",
}

_STOP_WORDS = frozenset(
    """a an and are as at be but by did do does for from had has have he her his how i if in
    into is it its me my no not of on or our she so than that the their them then there these
    they this to us was we were what when where which who why will with you your about tell
    know everything anything""".split()
)
_WORD = re.compile(r"[^\W_]+")
_RRF_K = 60
_LATE_COMMIT_S = 5.0
#: Candidates each ranking contributes to a hybrid search before fusion.
_CANDIDATES = 50
_CHUNKS = table_of(Chunk)


def query_terms(query: str) -> list[str]:
    """Lower-cased distinct words of a query without stop words, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if word not in _STOP_WORDS and len(word) < 64:
            seen.setdefault(word, None)
    return list(seen)


async def fulltext(
    connection: AsyncConnection,
    table: str,
    query: str,
    *,
    limit: int,
    session_id: str | None = None,
    where: str = "",
) -> list[dict[str, Any]]:
    """Best ``limit`` rows of ``table`` for ``query``, best first, each with a ``score``.

    ``where`` is an extra trusted SQL condition on alias ``t`` (never user text).
    """
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    columns = FULLTEXT_TABLES[table]
    params: dict[str, Any] = {"limit": limit}
    conditions = []
    if session_id is not None:
        conditions.append("t.session_id = :session_id")
        params["session_id"] = session_id
    if where:
        conditions.append(where)
    extra = "".join(f" AND {c}" for c in conditions)
    if connection.dialect.name == "postgresql":
        params["q"] = " | ".join(terms)
        # ts_rank (term frequency) is 2-3x cheaper than cover density (ts_rank_cd) per match.
        sql = (
            f"SELECT {columns}, ts_rank(t.tsv, q) AS score "
            f"FROM {table} t, to_tsquery('english', :q) q WHERE t.tsv @@ q{extra} "
            "ORDER BY score DESC, t.id DESC LIMIT :limit"
        )
    else:
        fts = f"{table}_fts"
        params["q"] = " OR ".join(f'"{term}"' for term in terms)
        if not extra:
            # Rank inside the FTS index alone, then fetch only the winners' rows.
            sql = (
                f"SELECT {columns}, -h.rank AS score FROM (SELECT rowid, bm25({fts}) AS rank "
                f"FROM {fts} WHERE {fts} MATCH :q ORDER BY rank LIMIT :limit) h "
                f"JOIN {table} t ON t.id = h.rowid ORDER BY h.rank"
            )
        else:
            sql = (
                f"SELECT {columns}, -bm25({fts}) AS score FROM {fts} "
                f"JOIN {table} t ON t.id = {fts}.rowid WHERE {fts} MATCH :q{extra} "
                f"ORDER BY bm25({fts}) LIMIT :limit"
            )
    rows = (await connection.execute(text(sql), params)).mappings().all()
    results = []
    for row in rows:
        item = dict(row)
        if "interrupted" in item:
            item["interrupted"] = bool(item["interrupted"])
        item["score"] = float(item["score"])
        results.append(item)
    return results


def reciprocal_rank_fusion(*rankings: list[int]) -> list[tuple[int, float]]:
    """Fuse ranked id lists: ``score = sum(1 / (60 + rank))``, best first."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (_RRF_K + rank + 1)
    return sorted(scores.items(), key=lambda pair: (-pair[1], -pair[0]))


class VectorIndex:
    """In-memory matrix of chunk embeddings, refreshed incrementally from the database.

    Rows are picked up by ``embedded_at``, so chunks embedded by another process (or after a
    failed embedding call was retried) appear on the next search.
    """

    def __init__(self) -> None:
        self._vectors: dict[int, np.ndarray] = {}
        self._embedded_at: dict[int, float] = {}
        self._watermark = -math.inf
        self._matrix: np.ndarray | None = None
        self._ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._vectors)

    async def refresh(self, connection: AsyncConnection) -> None:
        # Commit order is not timestamp order across processes: re-read a short window behind
        # the newest vector seen so a slow committer's rows are not skipped.
        mark = self._watermark - _LATE_COMMIT_S if self._watermark > -math.inf else -1e300
        rows = (
            await connection.execute(
                text(
                    "SELECT id, embedding, embedded_at FROM chunks "
                    "WHERE embedding IS NOT NULL AND embedded_at >= :mark"
                ),
                {"mark": mark},
            )
        ).all()
        for chunk_id, blob, embedded_at in rows:
            self._watermark = max(self._watermark, embedded_at)
            if self._embedded_at.get(chunk_id) == embedded_at:
                continue
            self._vectors[chunk_id] = np.frombuffer(blob, dtype="<f4")
            self._embedded_at[chunk_id] = embedded_at
            self._matrix = None

    def top(self, vector: list[float], k: int) -> list[tuple[int, float]]:
        """The ``k`` chunks most cosine-similar to ``vector``: ``[(chunk_id, similarity)]``."""
        query = np.asarray(vector, dtype=np.float32)
        if self._matrix is None or self._matrix.shape[1] != query.shape[0]:
            same_dim = [(i, v) for i, v in self._vectors.items() if v.shape == query.shape]
            if not same_dim:
                return []
            self._ids = np.array([i for i, _ in same_dim])
            matrix = np.stack([v for _, v in same_dim]).astype(np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            self._matrix = matrix / np.where(norms == 0, 1, norms)
        assert self._ids is not None
        norm = float(np.linalg.norm(query)) or 1.0
        # einsum stays on this thread: a BLAS matvec wakes OpenBLAS's thread pool, which on a
        # busy machine costs 100x more than the product itself.
        similarities = np.einsum("ij,j->i", self._matrix, query / norm)
        k = min(k, similarities.shape[0])
        best = np.argpartition(-similarities, k - 1)[:k]
        best = best[np.argsort(-similarities[best])]
        return [(int(self._ids[i]), float(similarities[i])) for i in best]


async def hybrid(
    conn: AsyncConnection,
    query: str,
    top_k: int,
    *,
    embeddings: Embedder | None,
    vectors: VectorIndex,
) -> list[dict[str, Any]]:
    """Chunks for ``query``, best first: full-text and vector ranks fused (reciprocal rank
    fusion) when ``embeddings`` and stored vectors exist, else full text alone.

    Each result says which rankings ``matched`` it, its cosine ``similarity`` (vector hits) and
    its fused ``score``. A failed query embedding falls back to full text.
    """
    textual = await fulltext(conn, "chunks", query, limit=max(top_k, _CANDIDATES))
    vector_hits: list[tuple[int, float]] = []
    if embeddings is not None:
        await vectors.refresh(conn)
        if len(vectors):
            try:
                [vector] = await embeddings.embed([query])
                vector_hits = vectors.top(vector, _CANDIDATES)
            except Exception as error:
                log.warning("embedding the query failed (%s); full-text only", error)
    if not vector_hits:
        for item in textual[:top_k]:
            item["matched"] = ["fulltext"]
        return textual[:top_k]
    by_id = {item["id"]: item for item in textual}
    similarity = dict(vector_hits)
    fused = reciprocal_rank_fusion([item["id"] for item in textual], [i for i, _ in vector_hits])[
        :top_k
    ]
    missing = [i for i, _ in fused if i not in by_id]
    if missing:
        rows = await conn.execute(
            select(
                _CHUNKS.c.id,
                _CHUNKS.c.kind,
                _CHUNKS.c.session_id,
                _CHUNKS.c.entity_id,
                _CHUNKS.c.text,
                _CHUNKS.c.created_at,
            ).where(_CHUNKS.c.id.in_(missing))
        )
        by_id.update({row.id: dict(row._mapping) for row in rows})
    results = []
    for chunk_id, score in fused:
        item = dict(by_id[chunk_id])
        item["matched"] = [
            name
            for name, hit in (("fulltext", "score" in item), ("vector", chunk_id in similarity))
            if hit
        ]
        item["similarity"] = similarity.get(chunk_id)
        item["score"] = score
        results.append(item)
    return results
