"""The labelled table lines of ``address_corpus.yaml``: who each line addresses, and its tier.

Each line is judged on its own, as the table would judge a final transcript from a player who
has not spoken to any NPC yet: a fresh :class:`~npcs.addressing.AddressDetector` over the
corpus's cast (every NPC in the scene, so no "sole NPC" rule), and the tier selector in an
ongoing conversation with no queue (only the phrase rules decide, as in ``tier_corpus``).
``glyphoxa bench address`` and the corpus tests print the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from campaigns.basics import GlyphoxaError, Tier
from npcs.addressing import AddressDetector
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector

__all__ = [
    "ADDRESS_CORPUS_PATH",
    "SPLITS",
    "AddressCorpus",
    "AddressLine",
    "AddressScore",
    "LineResult",
    "load_address_corpus",
    "score_address",
]

ADDRESS_CORPUS_PATH = Path(__file__).with_name("address_corpus.yaml")
#: ``tuning`` is what the detector and phrase lists are tuned against; ``held_out`` is not.
SPLITS = ("tuning", "held_out")


@dataclass(frozen=True, slots=True)
class AddressLine:
    """One labelled utterance: who should answer it (in order), and its tier."""

    split: str
    category: str
    text: str
    to: tuple[str, ...]
    tier: Tier


@dataclass(frozen=True, slots=True)
class AddressCorpus:
    cast: tuple[NpcDefinition, ...]
    lines: tuple[AddressLine, ...]

    def part(self, split: str | None = None, category: str | None = None) -> list[AddressLine]:
        """The lines of one split and/or category (None: all)."""
        return [
            line
            for line in self.lines
            if (split is None or line.split == split)
            and (category is None or line.category == category)
        ]

    def categories(self) -> list[str]:
        """Categories in the order the file first uses them."""
        return list(dict.fromkeys(line.category for line in self.lines))


@dataclass(frozen=True, slots=True)
class LineResult:
    """What the detector and the selector made of one line."""

    line: AddressLine
    answered: tuple[str, ...]
    address_reason: str
    tier: Tier
    tier_reason: str

    @property
    def address_ok(self) -> bool:
        return self.answered == self.line.to

    @property
    def tier_ok(self) -> bool:
        return self.tier == self.line.tier

    @property
    def false_address(self) -> bool:
        """An NPC answers that the line was not said to."""
        return any(name not in self.line.to for name in self.answered)

    def describe(self) -> str:
        parts = []
        if not self.address_ok:
            want = ", ".join(self.line.to) or "nobody"
            got = ", ".join(self.answered) or "nobody"
            parts.append(f"to {want} -> {got} ({self.address_reason})")
        if not self.tier_ok:
            parts.append(f"{self.line.tier.label} -> {self.tier.label} ({self.tier_reason})")
        return f"[{self.line.category}] {self.line.text!r}: " + "; ".join(parts)


@dataclass(frozen=True, slots=True)
class AddressScore:
    """Agreement with the labels over some lines."""

    results: tuple[LineResult, ...]

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def address_accuracy(self) -> float:
        return _share(r.address_ok for r in self.results)

    @property
    def tier_accuracy(self) -> float:
        return _share(r.tier_ok for r in self.results)

    @property
    def false_address_rate(self) -> float:
        """Share of lines on which an NPC answers who was not spoken to."""
        return _share(r.false_address for r in self.results)

    def misses(self) -> list[str]:
        return [r.describe() for r in self.results if not (r.address_ok and r.tier_ok)]

    def summary(self) -> str:
        return (
            f"address {self.address_accuracy:.1%}, tier {self.tier_accuracy:.1%}, "
            f"false address {self.false_address_rate:.1%} ({self.total} lines)"
        )


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def load_address_corpus(
    path: str | Path = ADDRESS_CORPUS_PATH, splits: Sequence[str] = SPLITS
) -> AddressCorpus:
    """The cast and the labelled lines of the chosen splits; bad entries are refused by name."""
    where = Path(path)
    try:
        raw = yaml.safe_load(where.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise GlyphoxaError(f"cannot read the address corpus {where}: {error}") from None
    if not isinstance(raw, dict):
        raise GlyphoxaError(f"{where}: expected a mapping with cast, tuning and held_out")
    cast = tuple(_npc(where, entry) for entry in raw.get("cast") or ())
    names = {npc.name for npc in cast}
    lines = []
    for split in splits:
        for category, entries in (raw.get(split) or {}).items():
            for entry in entries or ():
                lines.append(_line(where, split, str(category), entry, names))
    return AddressCorpus(cast, tuple(lines))


def _npc(where: Path, entry: Any) -> NpcDefinition:
    if not isinstance(entry, dict):
        raise GlyphoxaError(f"{where}: cast entry {entry!r} must be a mapping with a name")
    try:
        return NpcDefinition(personality="corpus", **entry)
    except ValidationError as error:
        raise GlyphoxaError(f"{where}: cast entry {entry!r}: {error}") from None


def _line(where: Path, split: str, category: str, entry: Any, names: set[str]) -> AddressLine:
    if not isinstance(entry, dict) or not {"to", "tier", "text"} <= set(entry):
        raise GlyphoxaError(
            f"{where}: {split}/{category}: entry {entry!r} needs to, tier and text, e.g. "
            '{to: [Bartok], tier: fast, text: "Bartok, a pint"}'
        )
    unknown = [name for name in entry["to"] or () if name not in names]
    if unknown:
        raise GlyphoxaError(
            f"{where}: {split}/{category}: {entry['text']!r} is addressed to {unknown[0]!r}, "
            f"who is not in the cast ({', '.join(sorted(names))})"
        )
    try:
        tier = Tier.parse(entry["tier"])
    except ValueError as error:
        raise GlyphoxaError(f"{where}: {split}/{category}: {entry['text']!r}: {error}") from None
    return AddressLine(split, category, str(entry["text"]), tuple(entry["to"] or ()), tier)


def score_address(
    corpus: AddressCorpus, lines: Iterable[AddressLine] | None = None, config: object = None
) -> AddressScore:
    """Judge ``lines`` (default: all of the corpus) each on its own, as the module says."""
    detector = AddressDetector(corpus.cast)
    selector = TierSelector(config)
    results = []
    for line in corpus.lines if lines is None else lines:
        detector.forget()
        decision = detector.detect("player", line.text, now=0.0)
        tier = selector.select(line.text, npc=None, queue_depth=0, now=0.0, first_turn=False)
        results.append(
            LineResult(line, tuple(decision.npcs), decision.reason, tier.selected, tier.reason)
        )
    return AddressScore(tuple(results))
