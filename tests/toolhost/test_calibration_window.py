"""The rolling window matches a plain recomputation over the last 100 calls."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from campaigns.basics import percentile
from tools.host.calibration import WINDOW, ToolStats

calls = st.lists(
    st.tuples(st.floats(min_value=0, max_value=10_000, allow_nan=False), st.booleans()),
    min_size=1,
    max_size=260,
)


@given(calls)
def test_window_figures_match_recomputation(samples: list[tuple[float, bool]]):
    stats = ToolStats()
    for duration, ok in samples:
        stats.record(duration, ok)
    window = samples[-WINDOW:]
    durations = [d for d, _ in window]
    assert len(stats) == len(window)
    assert stats.p50_ms == percentile(durations, 50)
    assert stats.p99_ms == percentile(durations, 99)
    assert stats.error_rate == sum(not ok for _, ok in window) / len(window)
    assert stats.samples() == window
    assert stats.failing == (len(window) >= 5 and stats.error_rate > 0.30)
