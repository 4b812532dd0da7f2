"""``bench e2e`` judges a machine with AVX-512 by the tighter goals of its reference machine."""

from __future__ import annotations

from bot.bench.e2e_goals import goals_for
from bot.bench.machine import describe_machine


def test_goals_follow_the_machines_instruction_sets() -> None:
    wide = goals_for(("avx", "avx2", "fma", "avx512f", "avx512bw"))
    narrow = goals_for(("avx", "avx2", "fma"))
    assert (wide.machine, narrow.machine) == ("with AVX-512", "without AVX-512")
    assert (wide.fast_p50_ms, wide.fast_p95_ms, wide.full_table_p95_ms) == (600, 1000, 1200)
    assert (wide.full_table_ratio, wide.floor_p50_ms, wide.endpoint_p50_ms) == (1.15, 300, 220)
    assert narrow.fast_p50_ms == 900 and goals_for(()) == narrow  # arm64, unknown flags
    for tighter, looser in zip(
        (wide.fast_p50_ms, wide.fast_p95_ms, wide.full_table_p95_ms, wide.floor_p50_ms),
        (narrow.fast_p50_ms, narrow.fast_p95_ms, narrow.full_table_p95_ms, narrow.floor_p50_ms),
        strict=True,
    ):
        assert tighter < looser
    assert goals_for(describe_machine().flags) in (wide, narrow)
