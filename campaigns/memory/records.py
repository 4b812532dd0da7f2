"""Session listings and recaps, the tool log and latency calibration.

Mixed into ``MemoryStore``; relies on its ``_read``/``_write``/``resolve_session`` helpers.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from campaigns.basics import GlyphoxaError
from campaigns.memory import transcripts
from campaigns.memory.models import (
    Session,
    Summary,
    ToolCalibration,
    ToolInvocation,
    Utterance,
    table_of,
)
from campaigns.memory.summaries import ExtractiveSummarizer

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["RecordsMixin", "tier_label"]

SESSIONS = table_of(Session)
UTTERANCES = table_of(Utterance)
SUMMARIES = table_of(Summary)
INVOCATIONS = table_of(ToolInvocation)
CALIBRATION = table_of(ToolCalibration)


def tier_label(tier: object) -> str | None:
    """``"fast"`` for ``Tier.FAST`` or ``"fast"``; a Tier is an IntEnum whose str() is a digit."""
    if tier is None:
        return None
    label = getattr(tier, "label", None)
    return str(label if label is not None else tier)


def _day(timestamp: float | None) -> str:
    if timestamp is None:
        return "?"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def _like(text: str) -> str:
    """``text`` for a LIKE pattern, its wildcards taken literally."""
    return text.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RecordsMixin:
    if TYPE_CHECKING:

        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _write(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        async def resolve_session(self, session_id: str) -> str: ...

    # ---------------------------------------------------------------------------- sessions
    async def list_sessions(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Sessions newest first with their utterance counts."""
        counts = (
            select(UTTERANCES.c.session_id, func.count().label("n"))
            .group_by(UTTERANCES.c.session_id)
            .subquery()
        )
        query = (
            select(SESSIONS, func.coalesce(counts.c.n, 0).label("utterances"))
            .outerjoin(counts, counts.c.session_id == SESSIONS.c.id)
            .order_by(SESSIONS.c.started_at.desc())
        )
        if limit is not None:
            query = query.limit(limit)
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
            summarized = set((await conn.execute(select(SUMMARIES.c.session_id))).scalars().all())
        return [
            {
                "id": row.id,
                "campaign": row.campaign,
                "title": row.title,
                "started_at": row.started_at,
                "ended_at": row.ended_at,
                "utterances": int(row.utterances),
                "has_summary": row.id in summarized,
            }
            for row in rows
        ]

    async def session_summary(self, session_id: str) -> dict[str, Any]:
        """A session's metadata and summary; a running session gets a live extractive one."""
        session_id = await self.resolve_session(session_id)
        async with self._read() as conn:
            session = (
                await conn.execute(select(SESSIONS).where(SESSIONS.c.id == session_id))
            ).one()
            stored = (
                await conn.execute(select(SUMMARIES).where(SUMMARIES.c.session_id == session_id))
            ).first()
            speakers = (
                await conn.execute(
                    select(UTTERANCES.c.speaker, UTTERANCES.c.npc, func.count())
                    .where(UTTERANCES.c.session_id == session_id)
                    .group_by(UTTERANCES.c.speaker, UTTERANCES.c.npc)
                )
            ).all()
            lines = (
                [] if stored is not None else await transcripts.transcript_lines(conn, session_id)
            )
        if stored is not None:
            text, source = stored.text, stored.source
        else:
            text, source = ExtractiveSummarizer().summarize_sync(lines), "extractive-live"
        return {
            "id": session.id,
            "campaign": session.campaign,
            "title": session.title,
            "started_at": session.started_at,
            "ended_at": session.ended_at,
            "utterances": sum(n for _, _, n in speakers),
            "speakers": sorted({s for s, npc, _ in speakers if npc is None}),
            "npcs": sorted({npc for _, npc, _ in speakers if npc is not None}),
            "summary": text,
            "summary_source": source,
        }

    async def session_lines(
        self, session_id: str, query: str | None = None, limit: int = 2000
    ) -> list[dict[str, Any]]:
        """A session's transcript in order (speaker, npc, text, started_at, tier, interrupted),
        only lines containing ``query`` (any case) when given."""
        session_id = await self.resolve_session(session_id)
        select_lines = (
            select(
                UTTERANCES.c.speaker,
                UTTERANCES.c.npc,
                UTTERANCES.c.text,
                UTTERANCES.c.started_at,
                UTTERANCES.c.tier,
                UTTERANCES.c.interrupted,
                UTTERANCES.c.stages,
            )
            .where(UTTERANCES.c.session_id == session_id)
            .order_by(UTTERANCES.c.started_at, UTTERANCES.c.id)
            .limit(limit)
        )
        if query and query.strip():
            select_lines = select_lines.where(UTTERANCES.c.text.ilike(f"%{_like(query)}%", "\\"))
        async with self._read() as conn:
            rows = (await conn.execute(select_lines)).all()
        return [dict(row._mapping) for row in rows]

    async def recap(self, sessions: int = 1) -> str:
        """ "Previously on...": summaries of the last ``sessions`` sessions, oldest first."""
        if sessions < 1:
            raise GlyphoxaError("recap needs at least one session")
        recent = await self.list_sessions(limit=sessions)
        if not recent:
            return "No sessions recorded yet."
        parts = []
        for number, item in enumerate(reversed(recent), start=1):
            detail = await self.session_summary(item["id"])
            title = f' "{item["title"]}"' if item["title"] else ""
            parts.append(
                f"Session {number}{title} ({_day(item['started_at'])}): {detail['summary']}"
            )
        return "\n\n".join(parts)

    # ------------------------------------------------------------------------- tool tables
    async def log_tool_call(
        self,
        *,
        npc: str,
        tool: str,
        tier: str,
        status: str,
        duration_ms: float,
        session_id: str | None = None,
        approval: str | None = None,
    ) -> None:
        """One tool call; ``approval`` is the DM's decision when the call needed one."""
        async with self._write() as conn:
            await conn.execute(
                insert(INVOCATIONS).values(
                    npc=npc,
                    tool=tool,
                    tier=tier_label(tier) or "",
                    status=status,
                    duration_ms=float(duration_ms),
                    session_id=session_id,
                    approval=approval[:200] if approval else None,
                    created_at=time.time(),
                )
            )

    async def tool_calls(self, limit: int = 100) -> list[dict[str, Any]]:
        """The most recent tool invocations, newest first."""
        query = select(INVOCATIONS).order_by(INVOCATIONS.c.id.desc()).limit(limit)
        async with self._read() as conn:
            return [dict(row._mapping) for row in await conn.execute(query)]

    async def save_calibration(
        self, environment: str, tool: str, samples: list[tuple[float, bool]]
    ) -> None:
        """Replace the stored latency window of ``tool`` in ``environment``."""
        values = {
            "environment": environment,
            "tool": tool,
            "samples": [[float(ms), bool(ok)] for ms, ok in samples],
            "updated_at": time.time(),
        }
        async with self._write() as conn:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            statement = dialect.insert(CALIBRATION).values(**values)
            await conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["environment", "tool"],
                    set_={
                        "samples": statement.excluded.samples,
                        "updated_at": statement.excluded.updated_at,
                    },
                )
            )

    async def load_calibration(self, environment: str) -> dict[str, list[tuple[float, bool]]]:
        query = select(CALIBRATION.c.tool, CALIBRATION.c.samples).where(
            CALIBRATION.c.environment == environment
        )
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return {tool: [(float(ms), bool(ok)) for ms, ok in samples] for tool, samples in rows}
