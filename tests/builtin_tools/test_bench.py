"""The built-in tools benchmark runs and reports the rules search figure against its goal."""

from __future__ import annotations

from bot.bench.builtin_tools import run_bench


async def test_quick_bench_reports_every_figure() -> None:
    results = {r.name: r for r in await run_bench(quick=True)}
    assert set(results) == {
        "rules search p50",
        "rules search p99",
        "rules index build",
        "dice roll p50",
        "files read+atomic write p50",
        "fetch_page text extraction p50",
        "fetch_page text extraction, worst page",
    }
    assert results["rules search p50"].goal == "<= 5 ms"
    assert all(r.value > 0 for r in results.values())
