"""Benchmarks of the built-in tools' hot paths (``run_bench``; wired into ``glyphoxa bench``).

The rules search figure runs over the full SRD 5.1 when it is available (``GLYPHOXA_SRD_PATH``, or
the shared test copy next to the repository); otherwise over the summary alone, and says so.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

from bot.bench.result import BenchResult
from campaigns.basics import percentile
from tools.builtin.dice_engine import roll_expression
from tools.builtin.files import Sandbox
from tools.builtin.html_text import html_to_text
from tools.builtin.rules import build_index

__all__ = ["run_bench"]

_QUERIES = [
    "fire ball",
    "grapple",
    "what does prone do",
    "opportunity attack",
    "bag of holding",
    "long rest",
    "magic missile",
    "cover",
    "goblin",
    "concentration save",
    "hold person",
    "dragon breath",
    "stealth",
    "exhaustion levels",
    "longsword damage",
    "how does two weapon fighting work",
]


def _srd_path() -> Path | None:
    env = os.environ.get("GLYPHOXA_SRD_PATH")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data" / "srd5.1")
    return next((p for p in candidates if (p / "5e-SRD-Spells.json").is_file()), None)


def _bench_rules(quick: bool) -> list[BenchResult]:
    srd = _srd_path()
    started = time.perf_counter()
    index = build_index(srd)
    build_ms = (time.perf_counter() - started) * 1000
    corpus = f"full SRD 5.1 + summary, {index.count()} entries" if srd else "summary only"
    rounds = 5 if quick else 40
    samples: list[float] = []
    try:
        for query in _QUERIES[:2]:
            index.search(query)  # warm the page cache
        for _ in range(rounds):
            for query in _QUERIES:
                t0 = time.perf_counter()
                index.search(query, limit=5)
                samples.append((time.perf_counter() - t0) * 1000)
    finally:
        index.close()
    method = f"{len(samples)} searches of {len(_QUERIES)} spoken queries, limit 5, {corpus}"
    p50 = percentile(samples, 50)
    return [
        BenchResult("rules search p50", p50, "ms", method, "<= 5 ms", p50 <= 5.0),
        BenchResult("rules search p99", percentile(samples, 99), "ms", method),
        BenchResult("rules index build", build_ms, "ms", f"in-memory FTS5, {corpus}"),
    ]


def _bench_dice(quick: bool) -> list[BenchResult]:
    rng = random.Random(1)
    rounds = 500 if quick else 5000
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        roll_expression("4d6kh3+2d8!+1d20kl1+5", rng)
        samples.append((time.perf_counter() - t0) * 1e6)
    return [
        BenchResult(
            "dice roll p50",
            percentile(samples, 50),
            "us",
            f"{rounds} rolls of 4d6kh3+2d8!+1d20kl1+5 (parse + roll + breakdown)",
        )
    ]


def _bench_files(quick: bool) -> list[BenchResult]:
    rounds = 50 if quick else 500
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Sandbox(Path(tmp))
        sandbox.write("notes/loot.md", "a ruby and 3 gp\n" * 100)
        samples = []
        for i in range(rounds):
            t0 = time.perf_counter()
            sandbox.read("notes/loot.md")
            sandbox.write(f"notes/n{i % 5}.md", "x" * 1000)
            samples.append((time.perf_counter() - t0) * 1000)
    return [
        BenchResult(
            "files read+atomic write p50",
            percentile(samples, 50),
            "ms",
            f"{rounds} pairs: 1.6 KB read, 1 KB write with fsync",
        )
    ]


_ARTICLE = (
    '<p class="body">The <a href="/wiki/Owlbear" title="Owlbear">owlbear</a> is a '
    "<b>fierce</b> beast &amp; hunts at night.</p>\n"
)


def _bench_html(quick: bool) -> list[BenchResult]:
    """fetch_page's text extraction: a 180 KiB article, and 2 MiB (quick: 200 KiB) of the worst
    markup (one tag per 3 bytes) that a page may be."""
    article = "<html><head><title>Owlbear</title></head><body>" + _ARTICLE * 1500 + "</body>"
    tags = 70_000 if quick else 700_000
    worst = "<a>" * tags
    rounds = 3 if quick else 15
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        html_to_text(article)
        samples.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    html_to_text(worst)
    worst_ms = (time.perf_counter() - t0) * 1000
    return [
        BenchResult(
            "fetch_page text extraction p50",
            percentile(samples, 50),
            "ms",
            f"{rounds} runs over a {len(article) // 1024} KiB article",
        ),
        BenchResult(
            "fetch_page text extraction, worst page",
            worst_ms,
            "ms",
            f"one run over {tags:,} tags, {len(worst) // 1024} KiB (bounded by fetch_page's cap)",
        ),
    ]


async def run_bench(quick: bool = False) -> list[BenchResult]:
    """Rules search over the full SRD, dice rolling, sandboxed file I/O, page text extraction."""
    results = await asyncio.to_thread(_bench_rules, quick)
    results += await asyncio.to_thread(_bench_dice, quick)
    results += await asyncio.to_thread(_bench_files, quick)
    results += await asyncio.to_thread(_bench_html, quick)
    return results
