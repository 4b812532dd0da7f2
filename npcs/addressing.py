"""Which NPC (if any) a player's final utterance is meant for.

Precedence: DM puppeting > explicit names (in order of mention) > continuation (the NPC this
player addressed within the window) > the sole active NPC in the scene > nobody. Names are matched
on STT output, so matching survives misspellings ("Bartock", "Grey Mantel", "gray mantle"): an
exact index, a phonetic skeleton index and a one-edit deletion index (SymSpell style) are built
once per NPC set, so a final costs a few dictionary lookups per word.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from npcs.schema import NpcDefinition

__all__ = ["AddressDecision", "AddressDetector", "NameMention", "phonetic_key"]

log = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z0-9]+")
_TOKEN = re.compile(r"([a-z0-9]+)(['’]s\b)?")
_POSSESSIVE = re.compile(r"['’]s\b")
_MAX_NGRAM = 3
_FUZZY_MIN_LEN = 5
_ARTICLES = frozenset({"the", "a", "an", "old", "good", "master", "mister", "miss", "lady", "sir"})
# A name right after these words is talked about, not talked to ("ask Bartok about Greymantle").
_REFERENCE_BEFORE = frozenset(
    "about of with from for than like at by against to into toward towards near "
    "ask tell told trust saw seen met meet find found kill killed follow visit".split()
)
# A name followed by these (without a comma) is the subject of a statement about the NPC.
_REFERENCE_AFTER = frozenset(
    "is was isn wasn has had hasn said says thinks thought knows knew seems looks will would "
    "won doesn didn does did can could might must should".split()
)
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
_PUPPET_PREFIX = re.compile(
    r"^\s*(?:\(?in character\)?\s*)?(?:as|playing|voicing)\s+(?P<name>[^,:]{1,40}?)\s*[,:]\s*"
    r"(?P<text>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PUPPET_SAYS = re.compile(
    r"^\s*(?P<name>[^,:]{1,40}?)\s+says\s*[,:]?\s*(?P<text>\S.*)$", re.IGNORECASE | re.DOTALL
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


def _sound_parts(word: str) -> tuple[str, str]:
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


def _join_sounds(parts: Sequence[tuple[str, str]]) -> str:
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
    words = _WORD.findall(word.lower())
    if not words:
        return ""
    return _join_sounds([_sound_parts(w) for w in words])


def _deletions(word: str) -> list[str]:
    return [word[:i] + word[i + 1 :] for i in range(len(word))]


@dataclass(frozen=True, slots=True)
class NameMention:
    npc: str
    matched: str
    """The words of the utterance that matched (as heard)."""
    how: str
    """``exact``, ``phonetic`` or ``fuzzy``."""
    position: int
    vocative: bool
    """True when the NPC is spoken to, False when only talked about."""


@dataclass(frozen=True, slots=True)
class AddressDecision:
    npcs: list[str]
    """NPCs that answer, in this order; empty means nobody answers."""
    reason: str
    mentions: list[NameMention] = field(default_factory=list)
    puppet_text: str | None = None
    """DM puppeting: the words to speak verbatim in the NPC's voice (no LLM)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "npcs": self.npcs,
            "reason": self.reason,
            "puppet_text": self.puppet_text,
            "mentions": [
                {"npc": m.npc, "matched": m.matched, "how": m.how, "vocative": m.vocative}
                for m in self.mentions
            ],
        }


@dataclass(frozen=True, slots=True)
class _Form:
    npc: str
    joined: str
    words: int


class _NameIndex:
    """Every name/alias form of every NPC, indexed three ways for O(1) lookups per word."""

    __slots__ = ("common", "exact", "first_chars", "fuzzy", "lengths", "name_words", "phonetic")

    def __init__(self, npcs: Iterable[NpcDefinition]) -> None:
        self.exact: dict[str, _Form] = {}
        self.phonetic: dict[str, _Form] = {}
        self.fuzzy: dict[str, _Form] = {}
        self.first_chars: set[str] = set()
        self.name_words: set[str] = set()
        self.lengths: set[int] = set()
        for npc in npcs:
            for name in npc.names():
                for words in _name_variants(name):
                    self.name_words.update(words)
                    self._add(_Form(npc.name, "".join(words), len(words)))
        self.common = _COMMON_WORDS.difference(self.name_words)

    def _add(self, form: _Form) -> None:
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

    def lookup(self, candidate: str) -> tuple[_Form, str] | None:
        form = self.exact.get(candidate)
        if form is not None:
            return form, "exact"
        return self.lookup_approximate(candidate)

    def lookup_approximate(
        self, candidate: str, key: str | None = None
    ) -> tuple[_Form, str] | None:
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
    words = _WORD.findall(_POSSESSIVE.sub("", name.lower()))
    variants = [words]
    trimmed = list(words)
    while len(trimmed) > 1 and trimmed[0] in _ARTICLES:
        trimmed = trimmed[1:]
        variants.append(list(trimmed))
    return variants


class AddressDetector:
    """Decides who answers a final utterance; keeps per-player continuation state.

    Args:
        npcs: the campaign's NPCs (a list or a name -> definition mapping).
        continuation_window_s: how long a player keeps talking to the NPC they last addressed.
        active: names of NPCs present in the scene (default: all); with exactly one, it answers
            unaddressed lines unless it is ``address_only``.
    """

    def __init__(
        self,
        npcs: Iterable[NpcDefinition] | Mapping[str, NpcDefinition],
        *,
        continuation_window_s: float = 30.0,
        active: Iterable[str] | None = None,
    ) -> None:
        self.continuation_window_s = continuation_window_s
        self._last: dict[str, tuple[list[str], float]] = {}
        self.set_npcs(npcs)
        if active is not None:
            self.set_active(active)

    def set_npcs(self, npcs: Iterable[NpcDefinition] | Mapping[str, NpcDefinition]) -> None:
        """Rebuild the name index (hot reload); continuation state is kept for known NPCs."""
        values = list(npcs.values()) if isinstance(npcs, Mapping) else list(npcs)
        self._npcs = {npc.name: npc for npc in values}
        self._index = _NameIndex(values)
        self._active = list(self._npcs)

    def set_active(self, names: Iterable[str]) -> None:
        """The NPCs present in the current scene (unknown names are ignored)."""
        self._active = [name for name in names if name in self._npcs]

    def forget(self, speaker: str | None = None) -> None:
        """Drop continuation state for one player or everyone."""
        if speaker is None:
            self._last.clear()
        else:
            self._last.pop(speaker, None)

    def mentions(self, text: str) -> list[NameMention]:
        """Every NPC named in ``text``, in order of mention (first mention per NPC)."""
        lowered = text.lower()
        spans = [
            (m.group(1), m.start(), m.end(1), m.group(2) is not None)
            for m in _TOKEN.finditer(lowered)
        ]
        words = [span[0] for span in spans]
        sounds = [_sound_parts(word) for word in words]
        common = self._index.common
        plain = [word in common for word in words]
        found: list[NameMention] = []
        seen: set[str] = set()
        index = self._index
        i = 0
        count = len(words)
        while i < count:
            # An n-gram never runs past a possessive ("Bartok's" ends the name).
            longest = 1
            while longest < _MAX_NGRAM and i + longest < count and not spans[i + longest - 1][3]:
                longest += 1
            candidates = [
                words[i] if n == 1 else "".join(words[i : i + n]) for n in range(longest, 0, -1)
            ]
            hit: tuple[_Form, str, int] | None = None
            for offset, candidate in enumerate(candidates):
                form = index.exact.get(candidate)
                if form is not None:
                    hit = (form, "exact", longest - offset)
                    break
            if hit is None and not plain[i]:
                for offset, candidate in enumerate(candidates):
                    n = longest - offset
                    if plain[i + n - 1]:
                        continue
                    key = sounds[i][0] + sounds[i][1] if n == 1 else _join_sounds(sounds[i : i + n])
                    result = index.lookup_approximate(candidate, key)
                    if result is not None:
                        hit = (result[0], result[1], longest - offset)
                        break
            if hit is None:
                i += 1
                continue
            form, how, n = hit
            if form.npc not in seen:
                seen.add(form.npc)
                last = spans[i + n - 1]
                found.append(
                    NameMention(
                        npc=form.npc,
                        matched=lowered[spans[i][1] : last[2]],
                        how=how,
                        position=i,
                        vocative=not last[3] and _is_vocative(words, i, n, lowered, last[2]),
                    )
                )
            i += n
        return found

    def detect(
        self, speaker: str, text: str, now: float, *, is_dm: bool = False
    ) -> AddressDecision:
        """Decide who answers ``text`` said by ``speaker`` at ``now`` (monotonic seconds).

        Records the outcome for the speaker's continuation.
        """
        if is_dm:
            puppet = self._puppet(text)
            if puppet is not None:
                return puppet
        mentions = self.mentions(text)
        if mentions:
            spoken_to = [m for m in mentions if m.vocative]
            if spoken_to:
                names = [m.npc for m in spoken_to]
                self._last[speaker] = (names, now)
                how = ", ".join(f"{m.npc} ({m.how} '{m.matched}')" for m in spoken_to)
                return AddressDecision(names, f"named {how}", mentions)
        last = self._last.get(speaker)
        if last is not None and now - last[1] <= self.continuation_window_s:
            names = [n for n in last[0] if n in self._npcs and not self._npcs[n].address_only]
            if names:
                self._last[speaker] = (names, now)
                age = now - last[1]
                return AddressDecision(
                    names, f"continuation: {speaker} spoke to {names[0]} {age:.0f}s ago", mentions
                )
        if len(self._active) == 1:
            sole = self._npcs[self._active[0]]
            if not sole.address_only:
                self._last[speaker] = ([sole.name], now)
                return AddressDecision([sole.name], f"sole active NPC {sole.name}", mentions)
        if mentions:
            return AddressDecision([], "NPCs only talked about, not to", mentions)
        return AddressDecision([], "no clear addressee", mentions)

    def _puppet(self, text: str) -> AddressDecision | None:
        for pattern in (_PUPPET_PREFIX, _PUPPET_SAYS):
            match = pattern.match(text)
            if match is None:
                continue
            words = _WORD.findall(match.group("name").lower())
            if not words or len(words) > _MAX_NGRAM + 1:
                continue
            words = [w for w in words if w not in _ARTICLES] or words
            result = self._index.lookup("".join(words))
            if result is not None:
                npc = result[0].npc
                return AddressDecision(
                    [npc], f"DM puppeting {npc}", puppet_text=match.group("text").strip()
                )
        return None


def _is_vocative(words: list[str], i: int, n: int, cleaned: str, end_char: int) -> bool:
    """Spoken to ("Bartok, ...", "..., Bartok?", "hey Bartok") rather than about."""
    if i > 0 and words[i - 1] in _REFERENCE_BEFORE:
        return False
    after = cleaned[end_char : end_char + 2].lstrip(" ")
    if after[:1] in {",", "!", "?", ":"}:
        return True
    following = words[i + n] if i + n < len(words) else ""
    if following == "s" or following in _REFERENCE_AFTER:
        return False
    return True
