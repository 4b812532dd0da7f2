"""Value types of the tool host: what the NPC engines send in and get back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from campaigns.basics import Tier
from tools.host.content import Attachment
from tools.spec import LatencyMeta

if TYPE_CHECKING:
    from tools.host.calibration import ToolStats

__all__ = ["Invocation", "ResultStatus", "ToolCall", "ToolInfo", "ToolResult", "TurnToolReport"]

ResultStatus = Literal["ok", "error", "timeout", "refused", "invalid"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call an LLM asked for; ``arguments`` may still be the raw JSON string."""

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call produced, ready to hand back to the LLM as a ``tool`` message.

    A failure is a result too (``is_error``), never an exception in the pipeline.
    """

    call_id: str
    name: str
    content: str
    structured: Any = None
    is_error: bool = False
    status: ResultStatus = "ok"
    duration_ms: float = 0.0
    cached: bool = False
    attachments: tuple[Attachment, ...] = ()
    """Images, audio and binary resources the tool returned (described in ``content``)."""
    approval: str | None = None
    """The DM's decision when the call needed approval (see ``Invocation.approval``)."""
    arguments: Any = None
    """The arguments as the LLM sent them (set by ``ToolHost.call_many``; for displays)."""

    def model_text(self) -> str:
        """``content`` as the model reads it: a failure says so up front (``Error (status):``)
        unless its content already starts with "error"."""
        if self.is_error and not self.content.lower().startswith("error"):
            return f"Error ({self.status}): {self.content}"
        return self.content


@dataclass(frozen=True, slots=True)
class TurnToolReport:
    """The tool calls of one LLM response and what they cost the turn.

    Parallel calls cost the slowest one; ``merge`` sums reports of sequential rounds.
    """

    results: list[ToolResult]
    cost_ms: float

    @classmethod
    def merge(cls, reports: Sequence[TurnToolReport]) -> TurnToolReport:
        """Several rounds of one turn run one after another, so their costs add up."""
        results = [result for report in reports for result in report.results]
        return cls(results=results, cost_ms=sum(report.cost_ms for report in reports))


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the host sees it: exposed name, budget tier, health and measured latency.

    The measured figures read the live rolling window, so they are always current.
    """

    name: str
    server: str
    description: str
    input_schema: dict[str, Any]
    latency: LatencyMeta
    tier: Tier
    healthy: bool
    original_name: str = ""
    kind: Literal["builtin", "mcp"] = "mcp"
    within_budget: bool = True
    """False when even DEEP cannot fit the tool (too slow or demoted past DEEP)."""
    demoted: bool = False
    """True while the error rate keeps the tool one tier slower than its latency."""
    timeout_ms: float = 4000.0
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"
    """MCP task augmentation: a ``required`` tool is called as a task and polled."""
    needs_tasks: bool = False
    """Requires task augmentation its server does not offer: hidden from models."""
    stats: ToolStats | None = field(default=None, repr=False, compare=False)

    @property
    def measured_p50_ms(self) -> float | None:
        return self.stats.p50_ms if self.stats is not None else None

    @property
    def measured_p99_ms(self) -> float | None:
        return self.stats.p99_ms if self.stats is not None else None

    @property
    def error_rate(self) -> float | None:
        return self.stats.error_rate if self.stats is not None else None

    @property
    def samples(self) -> int:
        return len(self.stats) if self.stats is not None else 0

    def as_openai(self) -> dict[str, Any]:
        """The Chat Completions ``tools=`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for ``glyphoxa tools list --json``)."""
        return {
            "name": self.name,
            "server": self.server,
            "original_name": self.original_name,
            "kind": self.kind,
            "tier": self.tier.label,
            "within_budget": self.within_budget,
            "demoted": self.demoted,
            "healthy": self.healthy,
            "declared_p50_ms": self.latency.estimated_duration_ms,
            "declared_max_ms": self.latency.max_duration_ms,
            "timeout_ms": self.timeout_ms,
            "task_support": self.task_support,
            "needs_tasks": self.needs_tasks,
            "read_only": self.latency.read_only,
            "idempotent": self.latency.idempotent,
            "cacheable_seconds": self.latency.cacheable_seconds,
            "measured_p50_ms": self.measured_p50_ms,
            "measured_p99_ms": self.measured_p99_ms,
            "error_rate": self.error_rate,
            "samples": self.samples,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Invocation:
    """One entry of the invocation log (persisted by the campaign store when it runs)."""

    npc: str
    tool: str
    server: str
    tier: Tier
    status: ResultStatus
    duration_ms: float
    call_id: str = ""
    cached: bool = False
    approval: str | None = None
    """None when no approval was needed; else ``approved``, ``approved (remembered)``,
    ``denied``, ``timeout`` or ``unavailable``, with the DM's name when known."""
