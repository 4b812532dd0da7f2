"""What each session used of its models and what it cost, kept with the session.

Mixed into ``MemoryStore``. The table's spend meter holds the running totals and writes them
whole (``save_usage``), so a write is idempotent; a resumed session reads them back
(``session_usage``) and continues its total.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, select

from campaigns.memory.models import SessionUsage, table_of

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["USAGE_COLUMNS", "UsageRecordsMixin", "UsageReport"]

UsageReport = Callable[[int, int, bool], None]
"""What a model call of the memory itself (a summary, embeddings) used: input tokens, output
tokens, and whether they were estimated (the server reported none). The table's spend meter
listens (``LlmSummarizer.on_usage``, ``OpenAIEmbeddings.on_usage``)."""

USAGE = table_of(SessionUsage)

#: The columns of one usage row as ``save_usage`` takes and ``session_usage`` returns them.
USAGE_COLUMNS = (
    "service",
    "model",
    "npc",
    "calls",
    "estimated_calls",
    "input_tokens",
    "output_tokens",
    "audio_input_tokens",
    "audio_output_tokens",
    "characters",
    "audio_seconds",
    "cost_usd",
)


class UsageRecordsMixin:
    if TYPE_CHECKING:

        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _write(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    async def save_usage(self, session_id: str, rows: Sequence[dict[str, Any]]) -> None:
        """Replace the session's usage with ``rows`` (dicts of ``USAGE_COLUMNS``)."""
        now = time.time()
        values = [
            {"session_id": session_id, "updated_at": now, **{k: row[k] for k in USAGE_COLUMNS}}
            for row in rows
        ]
        async with self._write() as conn:
            await conn.execute(delete(USAGE).where(USAGE.c.session_id == session_id))
            if values:
                await conn.execute(insert(USAGE), values)

    async def session_usage(self, session_id: str) -> list[dict[str, Any]]:
        """The session's usage rows (dicts of ``USAGE_COLUMNS``), most expensive first."""
        columns = [USAGE.c[name] for name in USAGE_COLUMNS]
        query = (
            select(*columns)
            .where(USAGE.c.session_id == session_id)
            .order_by(USAGE.c.cost_usd.desc(), USAGE.c.service, USAGE.c.model, USAGE.c.npc)
        )
        async with self._read() as conn:
            result = await conn.execute(query)
            return [dict(row._mapping) for row in result]
