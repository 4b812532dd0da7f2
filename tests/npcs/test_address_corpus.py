"""Address detection and tier selection against the labelled table talk of
bot/bench/address_corpus.yaml: accuracy floors on the tuning and the held-out part."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from bot.bench.address import ADDRESS_FLOOR, FALSE_ADDRESS_CEILING, TIER_FLOOR, run_bench
from bot.bench.address_corpus import (
    SPLITS,
    AddressScore,
    LineResult,
    load_address_corpus,
    score_address,
)
from campaigns.basics import GlyphoxaError, Tier
from npcs.addressing import AddressDetector

CORPUS = load_address_corpus()


def test_the_corpus_is_large_split_and_covers_every_category_in_both_parts() -> None:
    tuning, held_out = CORPUS.part("tuning"), CORPUS.part("held_out")
    assert len(tuning) + len(held_out) >= 150
    assert len(held_out) >= 90
    assert not {line.text.lower() for line in tuning} & {line.text.lower() for line in held_out}
    for part in (tuning, held_out):
        assert {line.category for line in part} == set(CORPUS.categories())
        assert {line.tier for line in part} == set(Tier)
        spoken_to = Counter(bool(line.to) for line in part)
        assert min(spoken_to.values()) >= len(part) // 3  # addressed and unaddressed lines
    addressed = {name for line in CORPUS.lines for name in line.to}
    assert addressed == {npc.name for npc in CORPUS.cast}  # every NPC is asked somewhere


@pytest.mark.parametrize("split", SPLITS)
def test_each_part_keeps_its_accuracy_floors(split: str) -> None:
    scored = score_address(CORPUS, CORPUS.part(split))
    misses = "\n".join(scored.misses())
    assert scored.address_accuracy >= ADDRESS_FLOOR[split], misses
    assert scored.tier_accuracy >= TIER_FLOOR[split], misses
    assert scored.false_address_rate <= FALSE_ADDRESS_CEILING[split], misses


def test_the_corpus_tells_a_detector_that_answers_every_name_it_hears() -> None:
    """The floors can fail: reading every name heard as spoken to scores far below them."""
    detector = AddressDetector(CORPUS.cast)
    scored = score_address(CORPUS)
    naive = AddressScore(
        tuple(
            LineResult(
                r.line,
                tuple(m.npc for m in detector.mentions(r.line.text)),
                "every name",
                r.tier,
                r.tier_reason,
            )
            for r in scored.results
        )
    )
    assert naive.address_accuracy < 0.8 < scored.address_accuracy
    assert naive.false_address_rate > 0.2


def test_bench_address_reports_both_parts_and_each_category() -> None:
    results = asyncio.run(run_bench(quick=True))
    names = [result.name for result in results]
    for split in SPLITS:
        for figure in ("address accuracy", "tier accuracy", "false-address rate"):
            assert f"{figure} ({split})" in names
        for category in CORPUS.categories():
            assert f"  {split} / {category}: address accuracy" in names
    assert any(name.startswith("address detection per final p99") for name in names)
    accuracy = next(r for r in results if r.name == "address accuracy (tuning)")
    assert accuracy.passed is True and accuracy.unit == "%"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '{to: [Nobody], tier: fast, text: "Nobody, a pint"}',
            "'Nobody, a pint' is addressed to 'Nobody', who is not in the cast (Bartok)",
        ),
        ('{to: [], text: "a pint"}', "needs to, tier and text"),
        ('{to: [], tier: quick, text: "a pint"}', "'a pint': "),
    ],
)
def test_a_bad_corpus_entry_is_refused_naming_it(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "corpus.yaml"
    path.write_text(f"cast:\n  - {{name: Bartok}}\ntuning:\n  vocative:\n    - {entry}\n")
    with pytest.raises(GlyphoxaError, match=None) as raised:
        load_address_corpus(path)
    assert str(raised.value).startswith(f"{path}: tuning/vocative: ")
    assert message in str(raised.value)
