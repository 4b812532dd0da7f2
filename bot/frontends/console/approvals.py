"""Tool approvals in the console, beside the DM's other approvers: whichever answers first wins.

The tool host asks one ``Approver`` (``tools.host.approval``) and bounds the wait. When the
console watches a table, :class:`FirstAnswer` asks the table's own approver (the Discord DM
message, a rehearsal scene's script) and :class:`ConsoleApprover` at once; the first real
answer decides and the others are withdrawn (told who decided, when they can say so). An
approver that cannot ask anyone ("unavailable") does not decide while another still can.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tools.host.approval import ApprovalDecision, ApprovalRequest, Approver

__all__ = ["AnsweredApproval", "ConsoleApprover", "FirstAnswer", "PendingApproval"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PendingApproval:
    """A question waiting in the console."""

    id: int
    request: ApprovalRequest
    asked_at: float
    decided: asyncio.Future[ApprovalDecision] = field(repr=False)

    @property
    def deadline(self) -> float:
        return self.asked_at + self.request.timeout_s


@dataclass(frozen=True, slots=True)
class AnsweredApproval:
    """A question no longer waiting, and how it ended ("denied: no answer" at its timeout)."""

    item: PendingApproval
    outcome: str
    at: float


_RECENT_S = 90.0
"""How long an answered question stays on the pages, saying how it ended."""


class ConsoleApprover:
    """``Approver`` whose questions wait in the console until the DM presses a button."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self.pending: dict[int, PendingApproval] = {}
        self.answered: deque[AnsweredApproval] = deque(maxlen=20)
        self._settled: dict[int, ApprovalDecision] = {}
        self._ids = itertools.count(1)
        self._on_change = on_change

    def __repr__(self) -> str:
        return f"ConsoleApprover(pending={len(self.pending)})"

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        item = PendingApproval(next(self._ids), request, time.time(), future)
        self.pending[item.id] = item
        self._on_change()
        try:
            return await future
        finally:
            self.pending.pop(item.id, None)
            self.answered.append(AnsweredApproval(item, self._outcome(item), time.time()))
            self._on_change()

    def settled(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        """Another approver (Discord, a scene's script) answered first (``FirstAnswer``)."""
        for item in self.pending.values():
            if item.request is request:
                self._settled[item.id] = decision

    def recent(self, now: float | None = None) -> list[AnsweredApproval]:
        """Questions answered in the last minute and a half, newest first."""
        now = now if now is not None else time.time()
        return [a for a in reversed(self.answered) if now - a.at < _RECENT_S]

    def _outcome(self, item: PendingApproval) -> str:
        decision = self._settled.pop(item.id, None)
        if decision is None and item.decided.done() and not item.decided.cancelled():
            decision = item.decided.result()
        if decision is None or decision.outcome == "timeout":  # the wait ran out
            return "denied: no answer"
        where = f" ({decision.detail})" if decision.detail else ""
        who = f" by {decision.by}" if decision.by else ""
        return f"{decision.outcome}{who}{where}"

    def answer(self, approval_id: int, approved: bool, by: str = "DM") -> bool:
        """The DM's button; False when the question is gone (answered elsewhere, timed out)."""
        item = self.pending.get(approval_id)
        if item is None or item.decided.done():
            return False
        decision = ApprovalDecision(
            "approved" if approved else "denied", by=by, detail="in the console"
        )
        item.decided.set_result(decision)
        return True


class FirstAnswer:
    """Asks every approver at once; the first decisive answer wins (module docstring)."""

    def __init__(self, approvers: Sequence[Approver]) -> None:
        self.approvers = list(approvers)

    def __repr__(self) -> str:
        return f"FirstAnswer({self.approvers!r})"

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        tasks = [
            asyncio.create_task(_ask(approver, request), name=f"approval:{request.tool}:{n}")
            for n, approver in enumerate(self.approvers)
        ]
        undecided: ApprovalDecision | None = None
        waiting = set(tasks)
        try:
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    decision = task.result()
                    if decision.outcome != "unavailable":
                        self._settle(tasks, task, request, decision)
                        return decision
                    undecided = undecided or decision
            assert undecided is not None
            return undecided
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _settle(
        self,
        tasks: list[asyncio.Task[ApprovalDecision]],
        winner: asyncio.Task[ApprovalDecision],
        request: ApprovalRequest,
        decision: ApprovalDecision,
    ) -> None:
        """Tell the approvers that did not answer who did, before they are withdrawn."""
        for approver, task in zip(self.approvers, tasks, strict=True):
            settled = getattr(approver, "settled", None)
            if task is not winner and callable(settled):
                try:
                    settled(request, decision)
                except Exception:  # an approver's note must not change the decision
                    log.exception("could not tell %r the approval was decided", approver)


async def _ask(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    try:
        return await approver(request)
    except asyncio.CancelledError:
        raise
    except Exception as error:  # one broken channel leaves the others to answer
        log.warning("could not ask the DM about %s via %r: %s", request.tool, approver, error)
        return ApprovalDecision("unavailable", detail=str(error) or type(error).__name__)
