"""The goals ``glyphoxa bench e2e`` judges its figures by, for the kind of machine it runs on.

The same lines take several times longer on one 2-core VM than on another, so one set of goals
would either pass everywhere or fail on the machines DMs actually have. A machine with AVX-512
(Whisper's CTranslate2 and onnxruntime's kernels run twice as wide; llama.cpp is built portable,
AVX2, everywhere) is held to the tighter goals of the 2-core AVX-512 reference; any other to the
goals of the 2-core AVX2 reference (a CPython loop of 10M additions ~0.5 s, SmolLM2 ~18-28 ms a
token). Each row says which set it was judged by.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["E2eGoals", "goals_for"]


@dataclass(frozen=True, slots=True)
class E2eGoals:
    """Limits for one kind of machine (every figure at most this)."""

    machine: str
    """Which set: "with AVX-512" or "without AVX-512"."""
    fast_p50_ms: float
    fast_p95_ms: float
    full_table_ratio: float
    """Full table p50 over alone p50."""
    full_table_p95_ms: float
    floor_p50_ms: float
    """The instant LLM's p50: what the rest of the pipeline costs."""
    endpoint_p50_ms: float
    cut_off_pct: float = 5.0


_WITH_AVX512 = E2eGoals("with AVX-512", 600, 1000, 1.15, 1200, 300, 220)
_WITHOUT_AVX512 = E2eGoals("without AVX-512", 900, 1500, 1.2, 1800, 500, 250)


def goals_for(flags: Iterable[str]) -> E2eGoals:
    """The goals for a machine with these CPU flags (``bot.bench.machine.Machine.flags``)."""
    return _WITH_AVX512 if "avx512f" in set(flags) else _WITHOUT_AVX512
