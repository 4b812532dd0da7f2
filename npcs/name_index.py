"""NPC names indexed for lookups that survive speech-to-text misspellings.

Every name and alias form of every NPC goes into three indexes: exact, a phonetic skeleton
("Greymantle", "gray mantle" and "Grey Mantel" share "krmntl") and one-edit deletions (SymSpell
style), so a lookup costs a few dictionary probes whatever the number of NPCs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from npcs.schema import NpcDefinition

__all__ = [
    "ARTICLES",
    "WORD",
    "NameForm",
    "NpcNameIndex",
    "join_sounds",
    "phonetic_key",
    "sound_parts",
]

WORD = re.compile(r"[a-z0-9]+")
#: Words that may stand before a name and are not part of it ("the old Bartok").
ARTICLES = frozenset({"the", "a", "an", "old", "good", "master", "mister", "miss", "lady", "sir"})
_POSSESSIVE = re.compile(r"['’]s\b")
_FUZZY_MIN_LEN = 5
# Everyday words never start a misheard name: approximate matching skips n-grams that begin or
# end with one (exact lookups still run), which keeps a final under 100 us with 20 NPCs.
_COMMON_WORDS = frozenset(
    """a about after again all also am an and another any are around as at back be because
    been before being but by can could did do does doing don down each even every first for
    from get go going gonna good got had has have he her here him his how i if in into is it
    its just know let like look looks make maybe me more most much my need no not now of off
    okay ok on one only or other our out over please really right said say see she should so
    some still take tell than thank thanks that the their them then there these they thing
    think this those through time to too two up us very want was way we well were what when
    where which while who why will with would yeah yes yet you your""".split()
)
_PHONETIC_RULES = (
    ("tch", "c"),
    ("ch", "c"),
    ("sch", "sk"),
    ("ph", "f"),
    ("gh", ""),
    ("ck", "k"),
    ("kn", "n"),
    ("wr", "r"),
    ("dg", "j"),
    ("q", "k"),
    ("x", "ks"),
    ("z", "s"),
    ("c", "k"),
    ("v", "f"),
    ("d", "t"),
    ("b", "p"),
    ("g", "k"),
)
_VOWELS = str.maketrans("", "", "aeiouyhw")


def sound_parts(word: str) -> tuple[str, str]:
    """(head, tail) of one word's sound skeleton; see ``phonetic_key``."""
    text = word
    for old, new in _PHONETIC_RULES:
        if old in text:
            text = text.replace(old, new)
    if not text:
        return "", ""
    head = "a" if text[0] in "aeiouyhw" else text[0]
    out = head
    for char in text[1:].translate(_VOWELS):
        if char != out[-1]:
            out += char
    return head, out[1:]


def join_sounds(parts: Sequence[tuple[str, str]]) -> str:
    """Key of several words spoken as one name: later words lose their vowel heads."""
    key = parts[0][0] + parts[0][1]
    for head, tail in parts[1:]:
        piece = tail if head == "a" else head + tail
        if piece and key and piece[0] == key[-1]:
            piece = piece[1:]
        key += piece
    return key


def phonetic_key(word: str) -> str:
    """A coarse sound skeleton: first letter class, then consonant classes without repeats.

    "Greymantle", "gray mantle" and "Grey Mantel" all give "krmntl"; "Bartok" and "Bartock"
    give "prtk".
    """
    words = WORD.findall(word.lower())
    if not words:
        return ""
    return join_sounds([sound_parts(w) for w in words])


def _deletions(word: str) -> list[str]:
    return [word[:i] + word[i + 1 :] for i in range(len(word))]


@dataclass(frozen=True, slots=True)
class NameForm:
    """One way of saying an NPC's name, as the joined lowercase words heard."""

    npc: str
    joined: str
    words: int


class NpcNameIndex:
    """Every name/alias form of every NPC, indexed three ways for O(1) lookups per word."""

    __slots__ = ("common", "exact", "first_chars", "fuzzy", "lengths", "name_words", "phonetic")

    def __init__(self, npcs: Iterable[NpcDefinition]) -> None:
        self.exact: dict[str, NameForm] = {}
        self.phonetic: dict[str, NameForm] = {}
        self.fuzzy: dict[str, NameForm] = {}
        self.first_chars: set[str] = set()
        self.name_words: set[str] = set()
        self.lengths: set[int] = set()
        for npc in npcs:
            for name in npc.names():
                for words in _name_variants(name):
                    self.name_words.update(words)
                    self._add(NameForm(npc.name, "".join(words), len(words)))
        self.common = _COMMON_WORDS.difference(self.name_words)

    def _add(self, form: NameForm) -> None:
        if not form.joined:
            return
        self.exact.setdefault(form.joined, form)
        if len(form.joined) < _FUZZY_MIN_LEN:
            return
        key = phonetic_key(form.joined)
        if len(key) >= 4:
            self.phonetic.setdefault(key, form)
        self.fuzzy.setdefault(form.joined, form)
        for variant in _deletions(form.joined):
            self.fuzzy.setdefault(variant, form)
        self.first_chars.add(form.joined[0])
        for delta in (-1, 0, 1):
            self.lengths.add(len(form.joined) + delta)

    def lookup(self, candidate: str) -> tuple[NameForm, str] | None:
        form = self.exact.get(candidate)
        if form is not None:
            return form, "exact"
        return self.lookup_approximate(candidate)

    def lookup_approximate(
        self, candidate: str, key: str | None = None
    ) -> tuple[NameForm, str] | None:
        """Phonetic, then one-edit fuzzy match (only for words long enough to be safe)."""
        if len(candidate) < _FUZZY_MIN_LEN - 1:
            return None
        form = self.phonetic.get(phonetic_key(candidate) if key is None else key)
        if form is not None and abs(len(form.joined) - len(candidate)) <= 2:
            return form, "phonetic"
        if candidate[0] not in self.first_chars or len(candidate) not in self.lengths:
            return None
        fuzzy = self.fuzzy
        form = fuzzy.get(candidate)
        if form is not None:
            return form, "fuzzy"
        for variant in _deletions(candidate):
            form = fuzzy.get(variant)
            if form is not None:
                return form, "fuzzy"
        return None


def _name_variants(name: str) -> list[list[str]]:
    words = WORD.findall(_POSSESSIVE.sub("", name.lower()))
    variants = [words]
    trimmed = list(words)
    while len(trimmed) > 1 and trimmed[0] in ARTICLES:
        trimmed = trimmed[1:]
        variants.append(list(trimmed))
    return variants
