"""Commits the table's transcript to campaign memory as it happens, in order, off the hot path.

One writer task drains a queue, so a slow database never delays a turn and utterances keep
their order. Memory failures are logged, never raised into the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["TranscriptRecorder"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Line:
    speaker: str
    text: str
    npc: str | None
    started_at: float
    ended_at: float
    tier: str | None
    interrupted: bool
    stages: dict[str, float | None] | None = None


class TranscriptRecorder:
    """``start()`` opens a memory session; ``player``/``npc`` queue lines; ``stop()`` flushes."""

    def __init__(self, memory: Any, campaign: str) -> None:
        self.memory = memory
        self.campaign = campaign
        self.session_id: str | None = None
        self.bookmarks: list[str] = []
        """Moments the DM marked (``HH:MM note``); they end the session's recap."""
        self.committed = 0
        self.failed = 0
        self._queue: asyncio.Queue[_Line | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        # monotonic -> epoch seconds, fixed once so lines keep their spacing
        self._epoch_offset = time.time() - time.monotonic()

    async def start(self, title: str | None = None, *, resume: str | None = None) -> str | None:
        """Open a memory session, or continue ``resume`` (a table resumed by another process)
        when it still exists."""
        if self.memory is None:
            return None
        self.session_id = await self._continue(resume) if resume else None
        if self.session_id is None:
            self.session_id = await self.memory.start_session(self.campaign, title)
        self._writer = asyncio.create_task(self._write(), name="table:transcript-writer")
        return self.session_id

    async def _continue(self, session_id: str) -> str | None:
        try:
            return str(await self.memory.resolve_session(session_id))
        except Exception as error:  # deleted or unreadable: a new session keeps the table going
            log.warning(
                "cannot continue memory session %s (%s); starting a new one", session_id, error
            )
            return None

    def player(self, speaker: str, text: str, started_at: float, ended_at: float) -> None:
        self._put(_Line(speaker, text, None, started_at, ended_at, None, False))

    def npc(
        self,
        npc: str,
        text: str,
        started_at: float,
        ended_at: float,
        *,
        tier: str | None,
        interrupted: bool,
        stages: dict[str, float | None] | None = None,
    ) -> None:
        """An NPC line; ``stages`` is its turn's latency by stage (kept for past sessions)."""
        self._put(_Line(npc, text, npc, started_at, ended_at, tier, interrupted, stages))

    def _put(self, line: _Line) -> None:
        if self._writer is not None and not self._writer.done():
            self._queue.put_nowait(line)

    async def _write(self) -> None:
        while (line := await self._queue.get()) is not None:
            try:
                await self.memory.add_utterance(
                    self.session_id,
                    line.speaker,
                    line.text,
                    npc=line.npc,
                    started_at=line.started_at + self._epoch_offset,
                    ended_at=line.ended_at + self._epoch_offset,
                    tier=line.tier,
                    interrupted=line.interrupted,
                    stages=line.stages,
                )
                self.committed += 1
            except Exception as error:
                self.failed += 1
                log.error("could not store an utterance of %s: %s", line.speaker, error)
            finally:
                self._queue.task_done()

    async def flush(self, timeout_s: float = 10.0) -> None:
        """Wait until every queued line is committed."""
        if self._writer is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout_s)

    async def stop(self, summary: str | None = None) -> None:
        if self._writer is None:
            return
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._writer), 10.0)
        except TimeoutError:
            lost = self._queue.qsize()
            log.warning("transcript writer did not finish in time; %d lines lost", lost)
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        self._writer = None
        if self.session_id is not None:
            try:
                await self.memory.end_session(self.session_id, summary, bookmarks=self.bookmarks)
            except Exception as error:
                log.error("could not close memory session %s: %s", self.session_id, error)
