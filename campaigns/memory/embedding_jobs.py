"""Background embedding of L2 chunks, owned by one ``MemoryStore``.

Embedding is a network call, so it never sits on the write path: a chunk is committed without a
vector and embedded by a task here. Failures are logged and retried by ``backfill`` (run on open).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from campaigns.memory.embeddings import Embedder
from campaigns.memory.models import Chunk, table_of

__all__ = ["EmbeddingJobs"]

log = logging.getLogger(__name__)

CHUNKS = table_of(Chunk)
Opener = Callable[[], AbstractAsyncContextManager[AsyncConnection]]


class EmbeddingJobs:
    """Named tasks embedding chunks; ``close`` lets them finish briefly, then cancels them."""

    def __init__(self, embeddings: Embedder | None, read: Opener, write: Opener) -> None:
        self.embeddings = embeddings
        self._read = read
        self._write = write
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def schedule(self, chunk_ids: list[int]) -> None:
        if self.embeddings is not None and chunk_ids and not self._closed:
            self._spawn(self._embed(chunk_ids), f"memory-embed-{chunk_ids[0]}")

    def backfill_later(self) -> None:
        if self.embeddings is not None and not self._closed:
            self._spawn(self.backfill(), "memory-embed-backfill")

    async def backfill(self, batch: int = 64) -> int:
        """Embed every chunk that has no vector yet; returns how many were tried."""
        if self.embeddings is None:
            return 0
        async with self._read() as conn:
            query = select(CHUNKS.c.id).where(CHUNKS.c.embedding.is_(None)).order_by(CHUNKS.c.id)
            ids = list((await conn.execute(query)).scalars())
        for start in range(0, len(ids), batch):
            await self._embed(ids[start : start + batch])
        return len(ids)

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self, timeout_s: float) -> None:
        self._closed = True
        if not self._tasks:
            return
        _, still_running = await asyncio.wait(set(self._tasks), timeout=timeout_s)
        for task in still_running:
            task.cancel()
        await asyncio.gather(*still_running, return_exceptions=True)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(coroutine), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _guarded(coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            await coroutine
        except Exception as error:  # a background job has no caller to raise to
            log.warning("background embedding failed (%s); retried on next open", error)

    async def _embed(self, chunk_ids: list[int]) -> None:
        assert self.embeddings is not None
        async with self._read() as conn:
            rows = (
                await conn.execute(
                    select(CHUNKS.c.id, CHUNKS.c.text).where(CHUNKS.c.id.in_(chunk_ids))
                )
            ).all()
        if not rows:
            return
        try:
            vectors = await self.embeddings.embed([row.text for row in rows])
        except Exception as error:
            log.warning("embedding %d chunks failed (%s); retried on next open", len(rows), error)
            return
        async with self._write() as conn:
            for row, vector in zip(rows, vectors, strict=True):
                # A chunk rewritten meanwhile (text changed) keeps NULL and is embedded anew.
                await conn.execute(
                    update(CHUNKS)
                    .where(CHUNKS.c.id == row.id, CHUNKS.c.text == row.text)
                    .values(
                        embedding=np.asarray(vector, dtype="<f4").tobytes(),
                        embedding_model=self.embeddings.model,
                        embedded_at=time.time(),
                    )
                )
