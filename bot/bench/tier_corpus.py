"""The labelled table utterances of ``tier_corpus.yaml`` and the selector's accuracy on them.

Each line is judged as a turn in an ongoing conversation (no first-turn rule, no queue, no
recent DEEP, no DM override), so only the phrase rules decide; ``glyphoxa bench tiers`` and the
corpus test print the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from campaigns.basics import GlyphoxaError, Tier
from npcs.tier_selector import TierSelector

__all__ = ["CORPUS_PATH", "CorpusScore", "LabelledLine", "load_corpus", "score"]

CORPUS_PATH = Path(__file__).with_name("tier_corpus.yaml")
SPLITS = ("dev", "held_out")


@dataclass(frozen=True, slots=True)
class LabelledLine:
    split: str
    tier: Tier
    text: str


@dataclass(frozen=True, slots=True)
class CorpusScore:
    """Agreement with the labels; ``misses`` are (line, selected tier, reason)."""

    total: int
    correct: int
    misses: tuple[tuple[LabelledLine, Tier, str], ...]

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def describe_misses(self) -> list[str]:
        return [
            f"{line.tier.label} -> {got.label}: {line.text!r} ({reason})"
            for line, got, reason in self.misses
        ]


def load_corpus(
    path: str | Path = CORPUS_PATH, splits: Iterable[str] = SPLITS
) -> list[LabelledLine]:
    """The labelled lines of the chosen splits (``dev``, ``held_out``)."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise GlyphoxaError(f"cannot read the tier corpus {path}: {error}") from None
    lines = []
    for split in splits:
        for label, texts in (raw.get(split) or {}).items():
            tier = Tier.parse(label)
            lines += [LabelledLine(split, tier, str(text)) for text in texts or ()]
    return lines


def score(lines: Iterable[LabelledLine], config: object = None) -> CorpusScore:
    """Run every line through a fresh selector state (ongoing conversation, empty queue)."""
    selector = TierSelector(config)
    total = correct = 0
    misses = []
    for line in lines:
        decision = selector.select(line.text, npc=None, queue_depth=0, now=0.0, first_turn=False)
        total += 1
        if decision.selected == line.tier:
            correct += 1
        else:
            misses.append((line, decision.selected, decision.reason))
    return CorpusScore(total, correct, tuple(misses))
