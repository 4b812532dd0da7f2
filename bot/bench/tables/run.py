"""``glyphoxa bench tables``: how many tables one bot process serves, and what each one costs.

N simulated tables (``sim_table.py``: five players each over the real receive path, VAD, lanes,
routing, the mixer and a discord.py-like player thread) run in this process, each opened by the
production ``open_table`` with remote-style providers: the instant LLM and an OpenAI-compatible
speech server (``instant_servers.py``) in a separate process, as model servers would be. N
grows (1, 2, 4, ...; then halfway between the last pass and the first miss) while every table
keeps its 20 ms playback deadline (at most 0.1 % of its frames over 20 ms late; a late frame
is the machine's, not the bot's, when a bare 20 ms clock in another process was late at the same
moment: ``clock_probe.py``) and FAST voice-to-voice p50 stays within 10 % of one table's.
Reported: the largest such N, CPU (share of one core) and resident memory per table, and tables
per core. Then the players of every open table fall silent: what an idle table costs (CPU, and
the datagrams it sends: keepalives only, since playback sends only while there is audio).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bot.bench.result import BenchResult
from bot.bench.tables.sim_table import SimTable, TableWindow
from bot.bench.tables.sim_world import (
    EXAMPLE,
    bench_config,
    clock_probe,
    model_servers,
    player_line,
)
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import percentile

__all__ = ["run_bench"]

LATE_SHARE = 0.001  # at most 0.1 % of a table's frames may miss the 20 ms deadline
V2V_SLACK = 1.10  # FAST voice-to-voice p50 within 10 % of one table's
_COST_TABLES = 4  # measure at least this many tables, for the CPU and memory slopes


def _progress(message: str) -> None:
    print(f"  tables: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Step:
    """One measured window with ``tables`` tables open."""

    tables: int
    seconds: float
    cpu_share: float
    """Process CPU time / wall time (1.0 = one core busy)."""
    rss_mb: float
    late_share_worst: float
    """The worst table's share of frames over 20 ms late that the bare clock was not late with."""
    raw_late_share_worst: float
    """The same counting every late frame (the machine's stalls included)."""
    max_late_ms: float
    machine_late_share: float
    """What the bare clock in another process missed in the same window (the machine's noise)."""
    v2v_ms: list[float]
    turns: int
    failed: int

    @property
    def v2v_p50(self) -> float:
        return percentile(self.v2v_ms, 50) if self.v2v_ms else float("nan")

    def keeps(self, baseline_p50: float) -> bool:
        return (
            self.late_share_worst <= LATE_SHARE
            and self.failed == 0
            and bool(self.v2v_ms)
            and self.v2v_p50 <= baseline_p50 * V2V_SLACK
        )

    def describe(self) -> str:
        return (
            f"{self.tables} tables: cpu {self.cpu_share * 100:.0f}% of a core, rss "
            f"{self.rss_mb:.0f} MB, worst late {self.late_share_worst * 100:.2f}% of frames "
            f"({self.raw_late_share_worst * 100:.2f}% with the machine's stalls, when the bare "
            f"clock was late {self.machine_late_share * 100:.2f}%; max {self.max_late_ms:.0f} "
            f"ms), FAST v2v p50 {self.v2v_p50:.0f} ms over "
            f"{len(self.v2v_ms)} turns, {self.failed} failed"
        )


@dataclass(frozen=True, slots=True)
class IdleStep:
    """One window with every open table idle (nobody talking)."""

    tables: int
    seconds: float
    cpu_share: float
    datagrams: int
    """Sent by all tables in the window (keepalives, and audio if any played)."""

    @property
    def cpu_per_table(self) -> float:
        return self.cpu_share / self.tables

    @property
    def datagrams_per_s(self) -> float:
        """Per table."""
        return self.datagrams / self.tables / self.seconds

    def describe(self) -> str:
        return (
            f"{self.tables} idle tables: cpu {self.cpu_share * 100:.1f}% of a core "
            f"({self.cpu_per_table * 100:.2f}% each), {self.datagrams_per_s:.2f} datagrams/s each"
        )


async def run_bench(quick: bool) -> list[BenchResult]:
    window_s = 12.0 if quick else 30.0
    limit = 2 if quick else 256
    with tempfile.TemporaryDirectory(prefix="glyphoxa-tables-") as folder:
        async with model_servers() as urls, clock_probe() as probe:
            bench = _Bench(bench_config(urls, Path(folder)), window_s, probe)
            try:
                steps = await bench.ramp(limit)
                idle = await bench.idle(window_s)
                _progress(idle.describe())
            finally:
                await bench.close()
    return [*_results(steps, window_s), *_idle_results(idle)]


class _Bench:
    def __init__(self, config: GlyphoxaConfig, window_s: float, probe: Any) -> None:
        self.config = config
        self.window_s = window_s
        self.probe = probe
        self.tables: list[SimTable] = []
        self._closers: list[Any] = []
        self._line: tuple[list[bytes], int] | None = None

    async def ramp(self, limit: int) -> list[Step]:
        """Double N until a step misses, then try halfway back; every step is reported."""
        steps = [await self.measure(1, self.window_s * 2)]  # the baseline needs more turns
        baseline = steps[0].v2v_p50
        _progress(steps[0].describe())
        good, bad = (1, None) if steps[0].keeps(baseline) else (0, 1)
        n = 2
        while n <= limit:
            step = await self.measure(n, self.window_s)
            steps.append(step)
            _progress(step.describe())
            if bad is None and not step.keeps(baseline):
                bad = n
            elif bad is None:
                good = n
            if bad is not None and n >= min(_COST_TABLES, limit):
                break  # past the first miss, only the cost slope wanted more points
            n *= 2
        while bad is not None and good > 0 and bad - good > max(1, good // 4):
            middle = (good + bad) // 2
            await self.shrink(middle)
            step = await self.measure(middle, self.window_s)
            steps.append(step)
            _progress(step.describe())
            if step.keeps(baseline):
                good = middle
            else:
                bad = middle
        return steps

    async def measure(self, tables: int, seconds: float) -> Step:
        fresh = []
        while len(self.tables) < tables:
            fresh.append(await self._open_one())
        turns_each = int(seconds / 4) + 2
        for table in self.tables:
            table.prepare(turns_each + 1)
        await _warm_up(fresh)
        for table in self.tables:
            table.reset_window()
        await self.probe()
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        windows = [table.reset_window() for table in self.tables]
        machine = await self.probe()
        return _step(tables, wall, cpu / wall, windows, machine)

    async def idle(self, seconds: float, settle_s: float = 30.0) -> IdleStep:
        """Every open table's players fall silent; once the last answers have played out,
        measure a window of idle tables."""
        for table in self.tables:
            table.hush()
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and any(t.busy for t in self.tables):  # noqa: ASYNC110
            await asyncio.sleep(0.1)  # the tables' own tasks finish their turns
        await asyncio.sleep(1.0)  # the last utterance's silence frames
        for table in self.tables:
            table.reset_window()
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        windows = [table.reset_window() for table in self.tables]
        sent = sum(w.frames + w.keepalives for w in windows)
        return IdleStep(len(self.tables), wall, cpu / wall, sent)

    async def shrink(self, tables: int) -> None:
        while len(self.tables) > tables:
            table = self.tables.pop()
            await table.stop()
            close = self._closers.pop()
            await close()

    async def close(self) -> None:
        await self.shrink(0)

    async def _open_one(self) -> SimTable:
        from bot.frontends.discord_bot.tables import configured_tables

        if self._line is None:
            self._line = await player_line()
        opus, voiced = self._line
        factory = configured_tables(self.config, str(EXAMPLE))
        parts = await factory(None)
        table = SimTable(len(self.tables), parts.session, opus, voiced, asyncio.get_running_loop())
        table.start()
        self.tables.append(table)

        async def close() -> None:
            for closer in reversed(parts.closers):
                await closer()

        self._closers.append(close)
        _progress(f"table {len(self.tables)} open")
        return table


async def _warm_up(tables: list[SimTable], timeout_s: float = 30.0) -> None:
    """Until each new table answered once (models and voices loaded, caches warm)."""
    deadline = time.monotonic() + timeout_s
    while any(t.window.turns == 0 for t in tables) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)  # turns are counted by the tables' own tasks; poll them


def _step(
    tables: int,
    wall: float,
    cpu_share: float,
    windows: list[TableWindow],
    machine: dict[str, Any],
) -> Step:
    stalls = _Stalls(machine["spans"])
    own = [sum(1 for span in w.late_spans if not stalls.overlap(*span)) for w in windows]
    # A table that sent nothing (no answer played in the window) missed no deadline; a table
    # that failed its turns is caught by ``failed``.
    late = [n / w.frames if w.frames else 0.0 for n, w in zip(own, windows, strict=True)]
    raw = [w.late_frames / w.frames if w.frames else 0.0 for w in windows]
    return Step(
        tables=tables,
        seconds=wall,
        cpu_share=cpu_share,
        rss_mb=_rss_mb(),
        late_share_worst=max(late),
        raw_late_share_worst=max(raw),
        max_late_ms=max(w.max_late_ms for w in windows),
        machine_late_share=machine["late"] / machine["frames"] if machine["frames"] else 0.0,
        v2v_ms=[ms for w in windows for ms in w.v2v_ms],
        turns=sum(w.turns for w in windows),
        failed=sum(w.failed for w in windows),
    )


class _Stalls:
    """The bare clock's late frames: did the machine stall during ``[due, sent]``?"""

    def __init__(self, spans: list[list[float]]) -> None:
        ordered = sorted((float(a), float(b)) for a, b in spans)
        self._starts = [a for a, _ in ordered]
        self._reach: list[float] = []  # the latest end among spans starting up to here
        for _, end in ordered:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def overlap(self, due: float, sent: float) -> bool:
        index = bisect.bisect_right(self._starts, sent) - 1
        return index >= 0 and self._reach[index] >= due


def _results(steps: list[Step], window_s: float) -> list[BenchResult]:
    baseline = steps[0].v2v_p50
    kept = [s for s in steps if s.keeps(baseline)]
    best = max(kept, key=lambda s: s.tables) if kept else None
    cores = os.cpu_count() or 1
    per_table_cpu = _slope([(s.tables, s.cpu_share) for s in steps]) or steps[0].cpu_share
    per_table_mb = _slope([(s.tables, s.rss_mb) for s in steps]) or float("nan")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    method = (
        f"simulated tables in one process (five players each, real receive path with DAVE, "
        f"VAD, lanes, mixer and the production playback thread, sending only while there is "
        f"audio, into discord.py's packet path; instant LLM and an "
        f"OpenAI-compatible speech server in another process); {window_s:.0f} s windows, "
        f"{cores} cores, load average {load:.1f} at the end; a table keeps up when <= "
        f"{LATE_SHARE * 100:.1f} % of its frames are > 20 ms late while a bare 20 ms clock in "
        f"another process was on time, and FAST voice-to-voice p50 <= {V2V_SLACK:.2f} x one "
        f"table's ({baseline:.0f} ms)"
    )
    extra = {"steps": [s.describe() for s in steps], "baseline_v2v_p50_ms": baseline}
    if best is None:
        largest = BenchResult(
            "tables per process (largest N keeping every deadline)", 0, "tables",
            method + "; even one table missed its deadlines: the machine is too busy to say",
            extra=extra,
        )  # fmt: skip
        per_core = BenchResult(
            "tables per core", 1 / per_table_cpu if per_table_cpu > 0 else float("nan"),
            "tables", "by CPU only (1 / CPU per table): no N kept its deadlines here",
        )  # fmt: skip
        return [largest, *_costs(per_table_cpu, per_table_mb), per_core]
    largest = BenchResult(
        "tables per process (largest N keeping every deadline)", best.tables, "tables", method,
        extra={**extra, "v2v_p50_ms": best.v2v_p50},
    )  # fmt: skip
    per_core = BenchResult(
        "tables per core", best.tables / best.cpu_share if best.cpu_share > 0 else float("nan"),
        "tables",
        f"largest N / its CPU share ({best.tables} tables used {best.cpu_share * 100:.0f} % "
        f"of a core)",
    )  # fmt: skip
    v2v = BenchResult(
        "FAST voice-to-voice p50 at that N", best.v2v_p50, "ms",
        f"one table: {baseline:.0f} ms; {len(best.v2v_ms)} turns",
    )  # fmt: skip
    return [largest, *_costs(per_table_cpu, per_table_mb), per_core, v2v]


def _idle_results(idle: IdleStep) -> list[BenchResult]:
    how = (
        f"{idle.tables} tables open, every player silent, {idle.seconds:.0f} s window; the "
        "process's CPU share over the tables (an upper bound: the process's own idle work too)"
    )
    return [
        BenchResult("CPU per idle table", idle.cpu_per_table * 100, "% of a core", how),
        BenchResult(
            "datagrams per idle table", idle.datagrams_per_s, "per second",
            "what an idle table sends: UDP keepalives (one per 5 s) and no audio",
        ),
    ]  # fmt: skip


def _costs(cpu: float, mb: float) -> list[BenchResult]:
    return [
        BenchResult(
            "CPU per table", cpu * 100, "% of a core",
            "slope of process CPU share over the steps (each table always talking)",
        ),
        BenchResult("memory per table", mb, "MB", "slope of resident memory over the steps"),
    ]  # fmt: skip


def _slope(points: list[tuple[float, float]]) -> float | None:
    if len({x for x, _ in points}) < 2:
        return None
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    return float(np.polyfit(xs, ys, 1)[0])


def _rss_mb() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
