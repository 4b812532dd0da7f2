"""Looser name matching must not turn everyday words into NPC names.

The false-positive corpus is the everyday vocabulary Whisper writes (``npcs/everyday_words.txt``)
and the running English of the rules summary: said in a vocative frame ("Arrow, what do you
think?"), none of it may be read as a misheard or shortened name of any cast, alone or with
the word after it joined on ("bar talk" is how "Bartok" is misheard; "bird song" is no name).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from bot.bench.address_corpus import load_address_corpus
from npcs.addressing import AddressDetector
from npcs.campaign import load_campaign
from npcs.name_words import everyday_words
from npcs.schema import NpcDefinition

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "tools" / "builtin" / "data" / "rules_summary.yaml"
_FANTASY = [
    ("Grimble Fizzwick", ["the tinker"]),
    ("Elowen Moonwhisper", []),
    ("Dorian Vale", []),
    ("Korrin Ironfist", []),
    ("Madame Zelda", ["the fortune teller"]),
    ("Sergeant Brask", []),
    ("Ysolde", ["the witch"]),
    ("Mayor Holloway", []),
    ("Quillon", ["the scribe"]),
    ("Sister Morwen of the Ashen Veil", []),
]
CASTS = {
    "address corpus": list(load_address_corpus().cast),
    "example campaign": list(load_campaign(ROOT / "campaigns" / "example").npcs.values()),
    "fantasy names": [
        NpcDefinition(name=name, aliases=aliases, personality="x") for name, aliases in _FANTASY
    ],
}


def _rules_words() -> list[str]:
    entries = yaml.safe_load(RULES.read_text(encoding="utf-8"))["entries"]
    text = " ".join(entry["text"] for entry in entries)
    return re.findall(r"[a-z]+", text.lower())


def _approximate(detector: AddressDetector, said: str) -> list[str]:
    return [
        f"{m.npc} <- {m.matched!r} ({m.how})"
        for m in detector.mentions(f"{said}, what do you think?")
        if m.how != "exact"
    ]


@pytest.mark.parametrize("cast", list(CASTS), ids=str)
def test_no_everyday_word_is_read_as_a_misheard_name(cast: str) -> None:
    detector = AddressDetector(CASTS[cast])
    words = sorted(everyday_words())
    assert len(words) > 15000
    misread = [hit for word in words for hit in _approximate(detector, word)]
    assert misread == []


@pytest.mark.parametrize("cast", list(CASTS), ids=str)
def test_no_pair_of_words_in_running_english_is_read_as_a_name(cast: str) -> None:
    detector = AddressDetector(CASTS[cast])
    words = _rules_words()
    assert len(words) > 2000
    pairs = sorted({f"{a} {b}" for a, b in itertools.pairwise(words)})
    misread = [hit for pair in pairs for hit in _approximate(detector, pair)]
    assert misread == []


def test_the_guard_still_lets_misheard_names_through() -> None:
    """The same frame with Whisper's spellings of the names does find them."""
    detector = AddressDetector(CASTS["address corpus"])
    for said, npc in [
        ("Bartock", "Bartok"),
        ("Bar talk", "Bartok"),
        ("Gray mantle", "Greymantle"),
        ("Greymantel", "Greymantle"),
        ("Thorn wood", "Captain Vessa Thornwood"),
        ("Thomas", "Tomas Reed"),
        ("Elsbeth", "Lady Elspeth Marrow"),
        ("Hegar", "Hagar the Boatman"),
    ]:
        assert detector.detect("p", f"{said}, a word?", 0.0, record=False).npcs == [npc], said
