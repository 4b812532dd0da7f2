"""``glyphoxa bench address``: who answers realistic table talk, and at which tier.

Scores ``bot/bench/address_corpus.yaml`` on its tuning and held-out parts separately (address
accuracy, tier accuracy, false-address rate, then each category), and times address detection
on the corpus lines: a final costs one ``detect``; every STT partial one ``mentions`` (the NPC
whose budget caps the tier) and one looking ``detect`` (who would answer: prefill, speculation).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from bot.bench.address_corpus import SPLITS, AddressCorpus, load_address_corpus, score_address
from bot.bench.result import BenchResult
from campaigns.basics import percentile
from npcs.addressing import AddressDetector

__all__ = ["ADDRESS_FLOOR", "FALSE_ADDRESS_CEILING", "TIER_FLOOR", "run_bench"]

#: The accuracy each part of the corpus must keep (the corpus tests assert the same floors);
#: a few points under what each part scores, so a change that loses ground fails.
ADDRESS_FLOOR = {"tuning": 0.95, "held_out": 0.90}
TIER_FLOOR = {"tuning": 0.95, "held_out": 0.85}
#: Lines on which an NPC answers who was not spoken to, at most.
FALSE_ADDRESS_CEILING = {"tuning": 0.02, "held_out": 0.03}


async def run_bench(quick: bool) -> list[BenchResult]:
    corpus = load_address_corpus()
    results: list[BenchResult] = []
    for split in SPLITS:
        results += _split_results(corpus, split)
    results += _timing(corpus, rounds=20 if quick else 200)
    return results


def _split_results(corpus: AddressCorpus, split: str) -> list[BenchResult]:
    lines = corpus.part(split)
    scored = score_address(corpus, lines)
    method = f"{scored.total} lines of bot/bench/address_corpus.yaml ({split}), each judged alone"
    misses = {"misses": scored.misses()}
    figures = [
        ("address accuracy", scored.address_accuracy, ADDRESS_FLOOR[split], True),
        ("tier accuracy", scored.tier_accuracy, TIER_FLOOR[split], True),
        ("false-address rate", scored.false_address_rate, FALSE_ADDRESS_CEILING[split], False),
    ]
    results = [
        BenchResult(
            f"{name} ({split})",
            round(value * 100, 1),
            "%",
            method,
            goal=f"{'>=' if floor else '<='} {limit:.0%}",
            passed=value >= limit if floor else value <= limit,
            extra=misses,
        )
        for name, value, limit, floor in figures
    ]
    for category in corpus.categories():
        part = [line for line in lines if line.category == category]
        if not part:
            continue
        score = score_address(corpus, part)
        results.append(
            BenchResult(
                f"  {split} / {category}: address accuracy",
                round(score.address_accuracy * 100, 1),
                "%",
                f"{score.total} lines; tier {score.tier_accuracy:.0%}, "
                f"false address {score.false_address_rate:.0%}",
                extra={"misses": score.misses()},
            )
        )
    return results


def _timing(corpus: AddressCorpus, rounds: int) -> list[BenchResult]:
    detector = AddressDetector(corpus.cast)
    texts = [line.text for line in corpus.lines]
    partials = [" ".join(text.split()[: i + 1]) for text in texts for i in range(len(text.split()))]

    def final(text: str) -> object:
        detector.forget()
        return detector.detect("player", text, now=0.0)

    def partial(text: str) -> object:
        detector.mentions(text)  # what the table reads from each partial, in this order
        return detector.detect("player", text, now=0.0, record=False)

    results = []
    for label, fn, inputs, goal_us in (
        ("address detection per final", final, texts, 200.0),
        ("names and addressee per partial", partial, partials, 200.0),
    ):
        cpu = _cpu_times(fn, inputs, rounds)
        p99 = percentile(cpu, 99)
        method = (
            f"{len(inputs)} corpus {'finals' if 'final' in label else 'partials'} x {rounds} "
            f"rounds, cast of {len(corpus.cast)}, thread CPU time, gc off"
        )
        results += [
            BenchResult(f"{label} p50", percentile(cpu, 50), "us", method),
            BenchResult(
                f"{label} p99",
                p99,
                "us",
                method,
                goal=f"<= {goal_us:.0f} us",
                passed=p99 <= goal_us,
            ),
        ]
    return results


def _cpu_times(fn: Callable[[str], object], inputs: list[str], rounds: int) -> list[float]:
    clock = time.thread_time_ns
    samples: list[float] = []
    for text in inputs[:20]:
        fn(text)  # warm up
    gc.disable()
    try:
        for _ in range(rounds):
            for text in inputs:
                start = clock()
                fn(text)
                samples.append((clock() - start) / 1000.0)
    finally:
        gc.enable()
    return samples
