"""NPC names indexed for lookups that survive speech-to-text misspellings.

Every name and alias form of every NPC goes into the indexes: exact, a phonetic skeleton
("Greymantle", "gray mantle" and "Grey Mantel" share "krmntl"; "Bar talk" and "Bartok" share
"prtk"), one-edit deletions (SymSpell style), and for names of eight letters or more the
skeleton's one-edit deletions, confirmed by an edit distance of at most two: the tolerance grows
with the name's length. A lookup costs a few dictionary probes whatever the number of NPCs.
The parts of a name ("Thornwood", "Captain Vessa" for "Captain Vessa Thornwood", see
``npcs.name_words``) are indexed too, one rank below the names and aliases the DM wrote.

One normalisation (:func:`normalize_text`, :func:`name_forms`) serves both addressing and
``glyphoxa check``'s duplicate-name test: Unicode compatibility forms folded (NFKC), case
folded, accents, zero-width and other invisible characters dropped, punctuation splitting
words. So "Greymantle.", "Grey-mantle" and "Greymantle" plus a zero-width space are one name
to both, and an alias on another NPC cannot take a name over depending on file order. A key
that two NPCs would share in the approximate indexes is dropped from them: an ambiguous
misspelling answers nobody rather than whoever was loaded first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from npcs.name_words import edit_distance, name_parts
from npcs.schema import NpcDefinition

__all__ = [
    "ARTICLES",
    "WORD",
    "NameForm",
    "NameOwners",
    "NpcNameIndex",
    "join_sounds",
    "name_forms",
    "name_key",
    "normalize_text",
    "phonetic_key",
    "sound_parts",
]

#: A word of a name or an utterance after :func:`normalize_text`: letters and digits.
WORD = re.compile(r"[^\W_]+")
_INVISIBLE = frozenset({"Cf", "Mn", "Me"})
"""Format characters (zero-width space/joiners, bidi marks, soft hyphen) and combining marks."""
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
    ("alk", "ak"),  # a silent l: "talk", "walk" ("Bar talk" for "Bartok")
    ("olk", "ok"),
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
_WIDE_MIN_LEN = 8
"""Names this long are still matched two edits off when they sound alike."""
_SHORT_MIN_LEN = 3
"""Names this short (up to ``_FUZZY_MIN_LEN``) are matched one edit off only where they open
the line (``NpcNameIndex.lookup_opening``)."""
_PART_RANK = 2
"""How far a derived name part ranks below a name or alias the DM wrote."""


def normalize_text(text: str) -> str:
    """Text as names are compared: NFKC, case-folded, invisible characters and accents removed.

    ASCII text (every STT final) takes a fast path that is only ``lower()``.
    """
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    visible = "".join(c for c in decomposed if unicodedata.category(c) not in _INVISIBLE)
    return unicodedata.normalize("NFKC", visible).casefold()


def name_forms(name: str) -> list[str]:
    """Every key a name is matched by, full form first: its words joined ("greymantle"), then
    without leading articles ("the old sage" -> "oldsage", "sage"). Empty without letters."""
    return [joined for words in _name_variants(name) if (joined := "".join(words))]


def name_key(name: str) -> str:
    """The one key two names must not share: ``name_forms(name)[0]``, or ``""``."""
    forms = name_forms(name)
    return forms[0] if forms else ""


class NameOwners:
    """Which NPC owns each name form; the duplicate-name rule of ``check`` and hot reload."""

    __slots__ = ("_owners",)

    def __init__(self) -> None:
        self._owners: dict[str, tuple[str, str]] = {}

    def claim(self, npc: str, name: str) -> tuple[str, str] | None:
        """Record ``name`` for ``npc``; return ``(other NPC, its name)`` when another NPC
        already owns one of its forms (then nothing is recorded)."""
        forms = name_forms(name)
        for form in forms:
            owner = self._owners.get(form)
            if owner is not None and owner[0] != npc:
                return owner
        for form in forms:
            self._owners.setdefault(form, (npc, name))
        return None


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
    words = WORD.findall(normalize_text(word))
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
    part: bool = False
    """Derived from the NPC's name ("Thornwood"), not written by the DM."""
    character: bool = False
    """A player's character ("Arin"): ``npc`` holds the character's name. Heard like an NPC's
    name, so a player speaking to a character is not taken for speaking to an NPC, and a
    character's name never reads as a misheard NPC name."""


class _Claims:
    """Builds one lookup table: the nearest form per key; a tie between two NPCs drops it."""

    __slots__ = ("best",)

    def __init__(self) -> None:
        self.best: dict[str, tuple[int, NameForm | None]] = {}

    def put(self, key: str, form: NameForm, rank: int = 0) -> None:
        held = self.best.get(key)
        if held is None or rank < held[0]:
            self.best[key] = (rank, form)
        elif rank == held[0] and held[1] is not None and _owner(held[1]) != _owner(form):
            self.best[key] = (rank, None)

    def table(self) -> dict[str, NameForm]:
        return {key: form for key, (_, form) in self.best.items() if form is not None}


def _owner(form: NameForm) -> tuple[str, bool]:
    return form.npc, form.character


class NpcNameIndex:
    """Every name/alias form of every NPC, indexed three ways for O(1) lookups per word.

    A key two NPCs would share is dropped (a nearer match wins first: an exact form over a
    one-letter deletion), so the answer never depends on the order the NPCs were loaded in.
    Players' characters are indexed the same way: "Barton" said to a player is that
    character's name, never a misheard "Bartok".
    """

    __slots__ = (
        "common",
        "exact",
        "fuzzy",
        "fuzzy_gate",
        "name_words",
        "phonetic",
        "short",
        "wide",
    )

    def __init__(self, npcs: Iterable[NpcDefinition], characters: Iterable[str] = ()) -> None:
        """``characters``: the names players' characters go by, indexed beside the NPCs'."""
        self.name_words: set[str] = set()
        self.fuzzy_gate: set[tuple[str, int]] = set()
        """(first letter, length) of every word a one-edit fuzzy match may start from."""
        claims = {table: _Claims() for table in ("exact", "phonetic", "fuzzy", "wide", "short")}
        for npc in npcs:
            written: set[str] = set()
            for name in npc.names():
                for words in _name_variants(name):
                    self.name_words.update(words)
                    form = NameForm(npc.name, "".join(words), len(words))
                    if form.joined:
                        written.add(form.joined)
                        self._add(form, claims, 0)
            for words in name_parts(_name_variants(npc.name)[0], _COMMON_WORDS):
                form = NameForm(npc.name, "".join(words), len(words), part=True)
                if form.joined not in written:
                    self.name_words.update(words)
                    self._add(form, claims, _PART_RANK)
        for character in characters:
            variants = _name_variants(character)
            written = set()
            for words in variants:
                form = NameForm(character, "".join(words), len(words), character=True)
                if form.joined:
                    self.name_words.update(words)
                    written.add(form.joined)
                    self._add(form, claims, 0)
            for words in name_parts(variants[0], _COMMON_WORDS):
                form = NameForm(character, "".join(words), len(words), True, True)
                if form.joined not in written:
                    self.name_words.update(words)
                    self._add(form, claims, _PART_RANK)
        self.exact: dict[str, NameForm] = claims["exact"].table()
        self.phonetic: dict[str, NameForm] = claims["phonetic"].table()
        self.fuzzy: dict[str, NameForm] = claims["fuzzy"].table()
        self.wide: dict[str, NameForm] = claims["wide"].table()
        self.short: dict[str, NameForm] = claims["short"].table()
        """Short names (3-4 letters) and their one-letter deletions: matched one edit off only
        where a name opens the line (:meth:`lookup_opening`)."""
        # "the" of "the barkeep" stays an everyday word: approximate matching skips it.
        self.common = _COMMON_WORDS.difference(self.name_words - ARTICLES)

    def _add(self, form: NameForm, claims: dict[str, _Claims], rank: int) -> None:
        claims["exact"].put(form.joined, form, rank)
        if len(form.joined) < _FUZZY_MIN_LEN:
            if len(form.joined) >= _SHORT_MIN_LEN and form.words == 1:
                claims["short"].put(form.joined, form, rank)
                for variant in _deletions(form.joined):
                    claims["short"].put(variant, form, rank + 1)
            return
        key = phonetic_key(form.joined)
        if len(key) >= 4:
            claims["phonetic"].put(key, form, rank)
            if len(form.joined) >= _WIDE_MIN_LEN:
                claims["wide"].put(key, form, rank)
                for variant in _deletions(key):
                    claims["wide"].put(variant, form, rank + 1)
        claims["fuzzy"].put(form.joined, form, rank)
        for variant in _deletions(form.joined):
            claims["fuzzy"].put(variant, form, rank + 1)
        for delta in (-1, 0, 1):
            self.fuzzy_gate.add((form.joined[0], len(form.joined) + delta))

    def lookup(self, candidate: str) -> tuple[NameForm, str] | None:
        form = self.exact.get(candidate)
        if form is not None:
            return form, "exact"
        return self.lookup_approximate(candidate)

    def lookup_approximate(
        self, candidate: str, key: str | None = None
    ) -> tuple[NameForm, str] | None:
        """Phonetic, then one-edit fuzzy, then (long names) a similar sound within two edits.

        Only for words long enough to be safe; the caller skips everyday words.
        """
        if len(candidate) < _FUZZY_MIN_LEN - 1:
            return None
        if key is None:
            key = phonetic_key(candidate)
        form = self.phonetic.get(key)
        if form is not None and abs(len(form.joined) - len(candidate)) <= 2:
            return form, "phonetic"
        if (candidate[0], len(candidate)) in self.fuzzy_gate:
            fuzzy = self.fuzzy
            form = fuzzy.get(candidate)
            if form is not None:
                return form, "fuzzy"
            for variant in _deletions(candidate):
                form = fuzzy.get(variant)
                if form is not None:
                    return form, "fuzzy"
        if len(candidate) >= _WIDE_MIN_LEN - 1 and self.wide:
            return self._lookup_wide(candidate, key)
        return None

    def lookup_opening(self, candidate: str) -> tuple[NameForm, str] | None:
        """A short name one edit off ("Mera" for Mira, "Oren" for Orin, "Eda" for Edda), for
        a word that opens the line as a name does ("Mera, ..."): Whisper's usual slip on a
        short fantasy name, which elsewhere in a line is too likely another word to match."""
        if not _SHORT_MIN_LEN <= len(candidate) <= _FUZZY_MIN_LEN + 1:
            return None
        for variant in (candidate, *_deletions(candidate)):
            form = self.short.get(variant)
            if (
                form is not None
                and form.joined[0] == candidate[0]  # Whisper keeps a name's first letter
                and edit_distance(candidate, form.joined, 1) <= 1
            ):
                return form, "fuzzy"
        return None

    def _lookup_wide(self, candidate: str, key: str) -> tuple[NameForm, str] | None:
        """A long name two edits off whose sound skeleton is at most one edit off."""
        wide = self.wide
        for variant in (key, *_deletions(key)):
            form = wide.get(variant)
            if (
                form is not None
                and form.joined[0] == candidate[0]  # Whisper keeps a name's first letter
                and abs(len(form.joined) - len(candidate)) <= 2
                and edit_distance(candidate, form.joined, 2) <= 2
            ):
                return form, "fuzzy"
        return None


def _name_variants(name: str) -> list[list[str]]:
    words = WORD.findall(_POSSESSIVE.sub("", normalize_text(name)))
    variants = [words]
    trimmed = list(words)
    while len(trimmed) > 1 and trimmed[0] in ARTICLES:
        trimmed = trimmed[1:]
        variants.append(list(trimmed))
    return variants
