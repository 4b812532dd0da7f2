"""One benchmark figure, shared by every ``glyphoxa bench`` target (percentiles are
:func:`campaigns.basics.percentile`, the definition the rehearsal report uses too)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BenchResult"]


@dataclass(frozen=True, slots=True)
class BenchResult:
    name: str
    """What was measured, e.g. ``visible_tools p50 (200 tools)``."""
    value: float
    unit: str
    method: str
    """How it was measured: workload, iterations, clock."""
    goal: str | None = None
    """The target from the issue, e.g. ``<= 50 us``."""
    passed: bool | None = None
    extra: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        verdict = "" if self.passed is None else (" PASS" if self.passed else " MISS")
        goal = f" (goal {self.goal}{verdict})" if self.goal else ""
        return f"{self.name}: {self.value:.4g} {self.unit}{goal}  [{self.method}]"
