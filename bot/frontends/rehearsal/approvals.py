"""The DM's answers to tool-approval questions, scripted in a rehearsal scene.

Example (in a scene file)::

    approvals:
      - {tool: write_file, answer: deny}
      - {npc: Bartok, tool: roll, answer: approve, after_s: 2}
      - {answer: timeout}            # whatever comes next: the DM does not answer

Each question takes the first unused entry matching its NPC and tool (an entry without ``npc``
or ``tool`` matches any). A question no entry matches is refused as if no DM could be asked,
and says so in the log, so a scene never approves anything by accident.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.host.approval import ApprovalDecision, ApprovalRequest

__all__ = ["ScriptedApproval", "ScriptedApprover"]

log = logging.getLogger(__name__)


class ScriptedApproval(BaseModel):
    """One scripted answer of the DM."""

    model_config = ConfigDict(extra="forbid")

    answer: Literal["approve", "deny", "timeout"]
    tool: str | None = None
    """The tool this answer is for (as exposed to the NPC); empty: any tool."""
    npc: str | None = None
    """The NPC asking; empty: any NPC."""
    after_s: float = Field(default=0.0, ge=0, le=60)
    """How long the DM takes to answer (the NPC's filler line covers it)."""
    by: str = "DM"


class ScriptedApprover:
    """``Approver`` answering from a scene's ``approvals``; ``asked`` records every question."""

    def __init__(self, script: list[ScriptedApproval], *, speed: float = 1.0) -> None:
        self._left = list(script)
        self._speed = speed
        self.asked: list[tuple[ApprovalRequest, str]] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        entry = next((e for e in self._left if _matches(e, request)), None)
        if entry is None:
            log.warning(
                "scene scripts no DM answer for %s by %s: refused", request.tool, request.npc
            )
            self.asked.append((request, "unscripted"))
            return ApprovalDecision("unavailable", detail="the scene scripts no answer")
        self._left.remove(entry)
        self.asked.append((request, entry.answer))
        if entry.answer == "timeout":  # no need to wait out the real timeout in a rehearsal
            return ApprovalDecision("timeout", detail="scripted: the DM did not answer")
        if entry.after_s:
            await asyncio.sleep(entry.after_s / self._speed)
        return ApprovalDecision("approved" if entry.answer == "approve" else "denied", by=entry.by)


def _matches(entry: ScriptedApproval, request: ApprovalRequest) -> bool:
    if entry.tool is not None and entry.tool != request.tool:
        return False
    return entry.npc is None or entry.npc.casefold() == request.npc.casefold()
