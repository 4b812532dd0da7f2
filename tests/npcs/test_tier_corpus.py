"""The tier selector against the corpus written from the tier map (bot/bench/tier_corpus.yaml)."""

from __future__ import annotations

from collections import Counter

import pytest

from bot.bench.tier_corpus import load_corpus, score
from bot.settings.config import TiersConfig
from campaigns.basics import Tier
from npcs.tier_phrases import DEFAULT_DEEP_PHRASES, DEFAULT_STANDARD_PHRASES

CORPUS = load_corpus()


def test_corpus_is_large_balanced_and_has_a_held_out_split() -> None:
    assert len(CORPUS) >= 150
    per_tier = Counter(line.tier for line in CORPUS)
    assert set(per_tier) == set(Tier)
    assert min(per_tier.values()) >= len(CORPUS) // 4
    held_out = [line for line in CORPUS if line.split == "held_out"]
    assert Counter(line.tier for line in held_out) == {tier: 20 for tier in Tier}
    dev_texts = {line.text.lower() for line in CORPUS if line.split == "dev"}
    assert not [line.text for line in held_out if line.text.lower() in dev_texts]


def test_the_whole_corpus_agrees_with_the_tier_map() -> None:
    result = score(CORPUS)
    assert result.accuracy >= 0.90, "\n".join(result.describe_misses())


@pytest.mark.parametrize("tier", list(Tier), ids=lambda tier: tier.label)
def test_each_tier_agrees_with_the_tier_map(tier: Tier) -> None:
    result = score([line for line in CORPUS if line.tier == tier])
    assert result.accuracy >= 0.90, "\n".join(result.describe_misses())


def test_the_corpus_tells_a_selector_that_contradicts_the_map() -> None:
    """The check can fail: memory/rules words as DEEP (the old lists' mistake) score low."""
    swapped = TiersConfig(
        deep_phrases=list(DEFAULT_STANDARD_PHRASES), standard_phrases=list(DEFAULT_DEEP_PHRASES)
    )
    assert score(CORPUS, swapped).accuracy < 0.90
