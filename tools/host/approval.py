"""DM approval of tool calls: which calls wait for the DM, and the wait itself.

A call's mode is the most specific setting that exists: the NPC's mode for that tool, the
campaign's mode for that tool, the NPC's default, then the campaign default (``ask`` for tools
with side effects when the campaign enables approval, else ``never``). ``ask`` waits for the
DM once per NPC and tool in a session (an approval is remembered; a denial is not);
``always_ask`` waits every time. The DM answers through an ``Approver`` (a private Discord
message with buttons, or a rehearsal script); no answer within the campaign's ``timeout_s``
counts as a refusal, and so does having no approver at all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from campaigns.content import ApprovalMode, CampaignApproval, ToolApproval

__all__ = [
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approver",
    "NpcApproval",
    "resolve_mode",
]

log = logging.getLogger(__name__)

#: What an NPC file may say under ``approval:`` (a mode, or a default plus per-tool modes).
NpcApproval = ApprovalMode | ToolApproval | None

Outcome = Literal["approved", "denied", "timeout", "unavailable"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for the DM, with everything the DM needs to judge it."""

    npc: str
    tool: str
    server: str
    arguments: Mapping[str, Any]
    call_id: str = ""
    read_only: bool = False
    timeout_s: float = 45.0


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The DM's answer (or its absence). ``by`` names who answered, when someone did."""

    outcome: Outcome
    by: str | None = None
    detail: str = ""

    @property
    def approved(self) -> bool:
        return self.outcome == "approved"

    def label(self) -> str:
        """For the invocation log: ``approved by Dana``, ``timeout``, ``unavailable: ...``."""
        text = self.outcome if self.by is None else f"{self.outcome} by {self.by}"
        return f"{text}: {self.detail}" if self.detail else text


class Approver(Protocol):
    """Asks the DM; returns when they answered. The gate bounds the wait."""

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision: ...


def resolve_mode(
    npc: NpcApproval, campaign: CampaignApproval, tool: str, read_only: bool
) -> ApprovalMode:
    """The mode of one tool for one NPC (most specific setting wins; module docstring)."""
    if isinstance(npc, ToolApproval) and tool in npc.tools:
        return npc.tools[tool]
    if tool in campaign.tools:
        return campaign.tools[tool]
    if isinstance(npc, ToolApproval) and npc.default is not None:
        return npc.default
    if isinstance(npc, str):
        return npc
    return "ask" if campaign.enabled and not read_only else "never"


@dataclass(slots=True)
class ApprovalGate:
    """The host's approval policy for one session (``ToolHost.approvals``)."""

    campaign: CampaignApproval = field(default_factory=CampaignApproval)
    rules_for: Callable[[str], NpcApproval] = lambda _npc: None
    """The current ``approval:`` of an NPC by name (follows hot reloads)."""
    approver: Approver | None = None
    _granted: set[tuple[str, str]] = field(default_factory=set)

    def configure(
        self,
        *,
        campaign: CampaignApproval | None = None,
        rules_for: Callable[[str], NpcApproval] | None = None,
        approver: Approver | None = None,
    ) -> None:
        """Set what the session knows; omitted parts stay as they are."""
        if campaign is not None:
            self.campaign = campaign
        if rules_for is not None:
            self.rules_for = rules_for
        if approver is not None:
            self.approver = approver

    def mode(self, npc: str, tool: str, read_only: bool) -> ApprovalMode:
        return resolve_mode(self.rules_for(npc), self.campaign, tool, read_only)

    def needed(self, npc: str, tool: str, read_only: bool) -> bool:
        """Whether a call of ``tool`` by ``npc`` must wait for the DM now."""
        mode = self.mode(npc, tool, read_only)
        if mode == "always_ask":
            return True
        return mode == "ask" and (npc, tool) not in self._granted

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the DM and wait at most ``request.timeout_s``; never raises for a failure."""
        approver = self.approver
        if approver is None:
            return ApprovalDecision("unavailable", detail="no DM to ask")
        try:
            async with asyncio.timeout(request.timeout_s):
                decision = await approver(request)
        except TimeoutError:
            decision = ApprovalDecision("timeout", detail=f"no answer in {request.timeout_s:g} s")
        except Exception as error:  # a broken DM channel refuses the call, it never crashes it
            log.warning("could not ask the DM about %s: %s", request.tool, error)
            decision = ApprovalDecision("unavailable", detail=str(error) or type(error).__name__)
        if decision.approved and self.mode(request.npc, request.tool, request.read_only) == "ask":
            self._granted.add((request.npc, request.tool))
        log.info("approval of %s for %s: %s", request.tool, request.npc, decision.label())
        return decision
