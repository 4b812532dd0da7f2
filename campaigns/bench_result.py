"""One benchmark figure, shared by every ``glyphoxa bench`` target."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BenchResult", "percentile"]


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


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile, q in [0, 100]; samples need not be sorted."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]
