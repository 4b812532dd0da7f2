"""``glyphoxa bench console``: what the DM's console costs a running table.

One simulated table (``bot.bench.tables.sim_table``: five players over the real receive path,
VAD, lanes, routing, turns and the mixer, with the instant model servers in a child process,
as ``glyphoxa bench tables`` opens it) plays without a console, then with the console serving
one viewer, then five, in alternating windows of the same run; each viewer is a process of its
own (as a browser is) reading every update of the live page. The cost is this process's CPU
time over the window, as a share of one core, minus the share of the windows without a console.
The viewers also time each update from the table's event to its arrival.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.bench.result import BenchResult
from campaigns.basics import percentile

__all__ = ["run_bench"]

_GOALS = {1: 1.0, 5: 3.0}
"""Viewers -> the most CPU the console may add, in % of one core."""


def _progress(message: str) -> None:
    print(f"  console: {message}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class _Measured:
    """Per viewer count (0: no console): each window's share of a core, and the rest."""

    shares: dict[int, list[float]] = field(default_factory=lambda: {0: [], 1: [], 5: []})
    feed_shares: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: []})
    """The console feed's own CPU time (rendering, handing out) per window."""
    latencies: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: []})
    rates: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: []})


async def run_bench(quick: bool) -> list[BenchResult]:
    from bot.bench.tables.sim_world import bench_config, model_servers

    window_s = 10.0 if quick else 30.0
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="glyphoxa-console-") as folder:
        async with model_servers() as urls:
            config = bench_config(urls, Path(folder))
            config.console.port = 0
            config.console.link_file = str(Path(folder) / "console.json")
            async with _table(config) as table:
                measured = await _measure(config, table, window_s, rounds)
    return _results(measured, window_s, rounds)


@contextlib.asynccontextmanager
async def _table(config: Any) -> Any:
    from bot.bench.tables.sim_table import SimTable
    from bot.bench.tables.sim_world import EXAMPLE, player_line
    from bot.frontends.discord_bot.tables import configured_tables

    opus, voiced = await player_line()
    parts = await configured_tables(config, str(EXAMPLE))(None)
    table = SimTable(0, parts.session, opus, voiced, asyncio.get_running_loop())
    table.prepare(400)
    table.start()
    try:
        deadline = time.monotonic() + 60
        while table.window.turns == 0 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)  # warm: models loaded, the first turn answered
        yield table
    finally:
        await table.stop()
        for close in reversed(parts.closers):
            await close()


async def _measure(config: Any, table: Any, window_s: float, rounds: int) -> _Measured:
    from bot.frontends.console import console_for

    measured = _Measured()
    for round_ in range(rounds):
        measured.shares[0].append(await _window(window_s))
        _progress(f"round {round_ + 1}: no console {measured.shares[0][-1] * 100:.2f} % of a core")
        for viewers in (1, 5):
            console = console_for(config, config_path=None)
            await console.start()
            feed = console.hub.attach(table.session, "bench table")
            try:
                async with _viewers(console.hub, feed.id, viewers) as results:
                    before = feed.cpu_s
                    measured.shares[viewers].append(await _window(window_s))
                    measured.feed_shares[viewers].append((feed.cpu_s - before) / window_s)
                for stats in results:
                    measured.latencies[viewers] += stats["latency_ms"]
                    measured.rates[viewers].append(stats["events"] / window_s)
            finally:
                await console.stop()
            each = sum(measured.rates[viewers][-viewers:]) / viewers
            _progress(
                f"round {round_ + 1}: {viewers} viewer(s) "
                f"{measured.shares[viewers][-1] * 100:.2f} % of a core "
                f"(feed {measured.feed_shares[viewers][-1] * 100:.2f} %), {each:.1f} updates/s each"
            )
    return measured


async def _window(seconds: float) -> float:
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    return (time.process_time() - cpu0) / (time.monotonic() - wall0)


@contextlib.asynccontextmanager
async def _viewers(hub: Any, table_id: str, count: int) -> Any:
    """``count`` viewer processes, each reading every update; yields their stats once closed."""
    children = []
    for _ in range(count):
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.bench.console_viewer", hub.login_url(), table_id,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert child.stdout is not None
        ready = await asyncio.wait_for(child.stdout.readline(), 30)
        assert json.loads(ready)["ready"] == 200, ready
        children.append(child)
    results: list[dict[str, Any]] = []
    try:
        yield results
    finally:
        for child in children:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.close()
            line = await asyncio.wait_for(child.stdout.readline(), 30)
            results.append(json.loads(line))
            await child.wait()


def _results(measured: _Measured, window_s: float, rounds: int) -> list[BenchResult]:
    base = statistics.median(measured.shares[0]) * 100
    method = (
        f"one simulated table (5 players, instant model servers in a child process); "
        f"{rounds} round(s) of {window_s:g} s windows: no console, 1 viewer, 5 viewers; "
        "this process's CPU time / wall time, median of the rounds"
    )
    results = [BenchResult("table without the console", base, "% of a core", method)]
    for viewers, goal in _GOALS.items():
        plural = "s" if viewers > 1 else ""
        cost = statistics.median(measured.shares[viewers]) * 100 - base
        feed = statistics.median(measured.feed_shares[viewers]) * 100
        each = statistics.mean(measured.rates[viewers]) if measured.rates[viewers] else 0.0
        results.append(
            BenchResult(
                f"console cost, {viewers} viewer{plural} ({each:.1f} updates/s each)",
                cost,
                "% of a core",
                method,
                f"< {goal:g}",
                cost < goal,
            )
        )
        results.append(
            BenchResult(
                f"console feed's own CPU, {viewers} viewer{plural}",
                feed,
                "% of a core",
                "thread CPU time inside the feed's task (rendering and handing out updates)",
            )
        )
        if measured.latencies[viewers]:
            p95 = percentile(measured.latencies[viewers], 95)
            results.append(
                BenchResult(
                    f"update latency p95, {viewers} viewer{plural}",
                    p95,
                    "ms",
                    "the table's event -> its arrival in a viewer process",
                    "< 200",
                    p95 < 200,
                )
            )
    return results
