"""One place that decides what the CPU works on next, for every lane and voice of a table.

A full table is several players talking over each other on two cores. What a player feels is
the time from the end of their words to the NPC's voice, so work is served in this order:

1. ``ENDPOINT``: a speaker who just stopped: the turn model and the transcript that ends the
   turn (finals are never dropped, and are served first come, first served: no lane starves).
2. ``ANSWER``: the answering NPC: its voice (TTS). Its LLM runs in its own process; while an
   answer is on its way (``answering()``), optional work yields the cores to it.
3. ``ASIDE``: the transcript of a player talking among themselves (their partials said so):
   never dropped, but held while an answer (or a speculative one: ``guessing()``) is on its way
   or anything above waits, for at most ``aside_wait_s``. Table talk is nobody's turn to
   answer; on few cores its finals (a second look over the full window is the costliest
   decode) would otherwise take the recognizer from the next player to talk to an NPC and the
   cores from the answer, and at a full table most second looks are table talk's.
4. ``PARTIAL``: partial transcripts of a player who is talking to an NPC (they pick the tier,
   prefill the prompt, start the speculative answer).
5. ``CHATTER``: partials of players talking among themselves: the first to go.

Partials are optional: they run at once or not at all (a queued partial is stale by the time it
runs), and only while nothing more urgent is waiting or running; their interval stretches with
the number of people talking at once (``partial_interval``). The scheduler is a gate, not a
thread pool: each model keeps its own thread, the gate admits at most ``capacity`` jobs and one
job per model (``resource``) at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = ["CpuScheduler", "Skipped", "Work"]

log = logging.getLogger(__name__)

_TIMER_SLACK_S = 0.005
"""The event loop may run a timer up to its clock's resolution early."""


class Work(IntEnum):
    """Classes of CPU work, most urgent first."""

    ENDPOINT = 0
    ANSWER = 1
    ASIDE = 2
    PARTIAL = 3
    CHATTER = 4


class Skipped(Exception):
    """Optional work was not admitted: something more urgent has the CPU."""


@dataclass(slots=True)
class _Job:
    work: Work
    resource: str
    seq: int
    ready: asyncio.Future[None]
    queued: float = 0.0
    """``time.monotonic()`` when the job began to wait."""


@dataclass(slots=True)
class WorkStats:
    ran: int = 0
    skipped: int = 0
    waited_ms: list[float] = field(default_factory=list)
    """Time each admitted job waited for its turn (the last 1,000)."""


class CpuScheduler:
    """Admission by class of work; see the module docstring for the order and the rules."""

    def __init__(self, capacity: int = 2, *, aside_wait_s: float = 3.0) -> None:
        self.capacity = max(1, capacity)
        self.aside_wait_s = aside_wait_s
        self._seq = itertools.count()
        self._waiting: list[_Job] = []
        self._running: dict[str, Work] = {}  # resource -> class of the job using it
        self._answers = 0
        self._guesses = 0
        self._speaking: set[str] = set()
        self.stats: dict[Work, WorkStats] = {work: WorkStats() for work in Work}
        self.order: list[tuple[Work, str]] = []
        """(class, resource) of admitted jobs in the order they started (the last 200)."""

    # --- what is going on ----------------------------------------------------------------------
    def busy_with(self, at_most: Work) -> bool:
        """Work of class ``at_most`` or more urgent is running or waiting (an answer on its way
        counts as ``ANSWER``)."""
        if any(work <= at_most for work in self._running.values()):
            return True
        if any(job.work <= at_most for job in self._waiting):
            return True
        return self._answers > 0 and at_most >= Work.ANSWER

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """An NPC's answer is on its way (its LLM is thinking): optional work steps back."""
        self._answers += 1
        try:
            yield
        finally:
            self._answers -= 1
            self._dispatch()  # held table talk may go now

    @contextlib.contextmanager
    def guessing(self) -> Iterator[None]:
        """A speculative answer is thinking at its player's pause: table talk and chatter step
        back for it, but it is no answer on its way for that player's own words (the pause
        that follows is still heard at once: the guess is dropped if the player went on)."""
        self._guesses += 1
        try:
            yield
        finally:
            self._guesses -= 1
            self._dispatch()

    def speaking(self, lane: str, speaking: bool) -> None:
        """A lane's player started or stopped talking (for ``partial_interval``)."""
        if speaking:
            self._speaking.add(lane)
        else:
            self._speaking.discard(lane)

    def partial_interval(self, base_s: float, work: Work) -> float:
        """How often a lane may ask for a partial: ``base_s`` with one speaker, stretched by
        the number of people talking at once (and doubled while an answer is on its way for
        chatter), so partials cost about one speaker's worth of CPU however full the table."""
        interval = base_s * max(1, len(self._speaking))
        if work >= Work.CHATTER and (self._answers or self._guesses):
            interval *= 2
        return interval

    # --- admission ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def slot(self, work: Work, resource: str) -> AsyncIterator[None]:
        """Wait for this job's turn, hold it while the body runs.

        Partials (``PARTIAL``, ``CHATTER``) never wait: they raise :class:`Skipped` unless
        they can start at once with nothing more urgent running or waiting.
        """
        if work >= Work.PARTIAL:
            if not self._may_start_optional(work, resource):
                self.stats[work].skipped += 1
                raise Skipped(work.name.lower())
            self._start(work, resource, 0.0)
        else:
            await self._wait_turn(work, resource)
        try:
            yield
        finally:
            self._release(resource)

    def _may_start_optional(self, work: Work, resource: str) -> bool:
        if resource in self._running or len(self._running) >= self.capacity:
            return False
        # A partial steps back for any endpoint work; chatter also for answers (and guesses),
        # table talk and partials.
        if work == Work.PARTIAL:
            return not self.busy_with(Work.ENDPOINT)
        return not (self._guesses or self.busy_with(Work.PARTIAL))

    async def _wait_turn(self, work: Work, resource: str) -> None:
        loop = asyncio.get_running_loop()
        job = _Job(work, resource, next(self._seq), loop.create_future(), time.monotonic())
        self._waiting.append(job)
        self._waiting.sort(key=lambda j: (j.work, j.seq))
        queued_at = time.perf_counter()
        self._dispatch()
        # Held table talk goes at the latest after ``aside_wait_s``: nothing starves.
        deadline = (
            loop.call_later(self.aside_wait_s, self._dispatch) if work == Work.ASIDE else None
        )
        try:
            await job.ready
        except BaseException:
            if job in self._waiting:
                self._waiting.remove(job)
            elif job.ready.done() and not job.ready.cancelled():
                self._release(resource)  # admitted, but the caller is gone
            raise
        finally:
            if deadline is not None:
                deadline.cancel()
        self._note_wait(work, (time.perf_counter() - queued_at) * 1000.0)

    def _dispatch(self) -> None:
        """Start waiting jobs, most urgent first, while slots and their models are free."""
        for job in list(self._waiting):
            if len(self._running) >= self.capacity:
                return
            if job.resource in self._running or job.ready.done() or self._holds(job):
                continue
            self._waiting.remove(job)
            self._start(job.work, job.resource, None)
            job.ready.set_result(None)

    def _holds(self, job: _Job) -> bool:
        """Table talk waits while an answer (or a guess) is on its way or more urgent work runs
        or waits."""
        waited = time.monotonic() - job.queued + _TIMER_SLACK_S
        if job.work != Work.ASIDE or waited >= self.aside_wait_s:
            return False
        return self._guesses > 0 or self.busy_with(Work.ANSWER)

    def _start(self, work: Work, resource: str, waited_ms: float | None) -> None:
        self._running[resource] = work
        self.stats[work].ran += 1
        self.order.append((work, resource))
        del self.order[:-200]
        if waited_ms is not None:
            self._note_wait(work, waited_ms)

    def _note_wait(self, work: Work, waited_ms: float) -> None:
        waits = self.stats[work].waited_ms
        waits.append(waited_ms)
        del waits[:-1000]

    def _release(self, resource: str) -> None:
        self._running.pop(resource, None)
        self._dispatch()
