"""Campaign vocabulary: bias the recognizer toward NPC and place names, then fix near misses.

Whisper gets the names as an ``initial_prompt`` (and ``hotwords``); what it still splits or
misspells ("gray mantle", "Bar Tok") is mapped back by comparing each run of 1-3 words, glued
together, with each name, by spelling and by a crude sound key (so grey/gray, ph/f, c/k agree).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from campaigns.content import EntitiesFile

__all__ = ["CampaignNames", "NamedNpc", "Vocabulary", "phonetic_key"]

log = logging.getLogger(__name__)

_STOPWORDS = frozenset(
    {"the", "a", "an", "to", "of", "and", "or", "in", "on", "at", "for", "about", "with", "is"}
)
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.IGNORECASE)
_MIN_CORRECTED = 5
"""Shorter names ("Bart", "Grey") go into the prompt only: too many words sound like them."""
_TOKEN = re.compile(r"\S+")
_SLOT_WORDS = re.compile(r"[\w'-]+(?: [\w'-]+){0,2}")
"""A name's slot holds one to three words (a misheard "Greymantle," comes back as "Green and
all,"), set off by a comma at the start (after any fillers) or at the end, or at the start
before a capital that begins no sentence: Whisper sometimes drops the comma with the name
("Greymantle, tell me" as "Ramin' Told me")."""
_NOT_NAMES = frozenset(
    "yes yeah yep no nope well okay ok great good fine sure so now oh ah hey hmm "
    "um uh er thanks please look listen wait perfect excellent nice cool wow then and but also "
    "actually anyway honestly sir madam friend you i the a an".split()
)
"""Words that fill the name's slot in everyday speech ("Great, pour me a pint", "Yes,
please"): a slot of these alone is not a misheard name, and each would cost a 30 s decode.
Not "alright": without the lead-in, Whisper hears "Bartok," as "Alright,"."""
_LETTERS = re.compile(r"[^a-z]")
_SOUND_RULES = (
    ("ph", "f"), ("ck", "k"), ("gh", "g"), ("qu", "kw"), ("q", "k"), ("x", "ks"), ("z", "s"),
    ("ey", "a"), ("ay", "a"), ("ai", "a"), ("ee", "i"), ("ea", "i"), ("ie", "i"), ("y", "i"),
    ("oo", "u"), ("ou", "u"), ("c", "k"), ("w", "u"),
)  # fmt: skip


def _fillers_only(words: str) -> bool:
    return all(word in _NOT_NAMES for word in words.lower().split())


def _opening_slot(text: str) -> tuple[int, int] | None:
    """Where the words of ``text``'s opening name slot lie (after any filler chunks: "Well,
    Mardok, ..."), when it has one."""
    for chunk in re.finditer(r"[^,]*,", text):
        words = chunk.group()[:-1]
        if _fillers_only(words):
            continue
        if not _SLOT_WORDS.fullmatch(" ".join(words.split())):
            return None
        start = chunk.start() + len(words) - len(words.lstrip())
        return start, chunk.start() + len(words.rstrip())
    return None


class NamedNpc(Protocol):
    """An NPC as the vocabulary sees it: only its names."""

    def names(self) -> list[str]:
        """Its name first, then its aliases."""
        ...


class CampaignNames(Protocol):
    """What a vocabulary reads of a campaign (``npcs.campaign.Campaign``): the speech stack
    knows no NPC, so it asks for names only."""

    @property
    def npcs(self) -> Mapping[str, NamedNpc]: ...

    @property
    def entities(self) -> EntitiesFile: ...


def phonetic_key(word: str) -> str:
    """A rough sound-alike key: letters only, common spellings of a sound unified, no doubles."""
    key = _LETTERS.sub("", word.lower())
    for pattern, replacement in _SOUND_RULES:
        key = key.replace(pattern, replacement)
    return re.sub(r"(.)\1+", r"\1", key)


class Vocabulary:
    """Names the recognizer should know, with a post-correction pass for near misses."""

    def __init__(
        self, terms: Iterable[str], *, threshold: float = 0.84, names: Iterable[str] = ()
    ) -> None:
        """``names``: the NPC names and aliases among ``terms`` (a player calls them out)."""
        self.names = tuple(names)
        unique: dict[str, str] = {}
        for term in terms:
            term = term.strip()
            # Only proper names: "the barkeep" or "the sage" would turn "the page" into a name.
            if any(c.isupper() for c in term) and len(_LETTERS.sub("", term.lower())) >= 4:
                unique.setdefault(term.lower(), term)
        self.terms = list(unique.values())
        self.threshold = threshold
        self._glued: list[tuple[str, str, str]] = []
        for term in self.terms:
            bare = _ARTICLE.sub("", term)  # "The Rusty Flagon" is matched as "Rusty Flagon"
            glued = _LETTERS.sub("", bare.lower())
            if len(glued) >= _MIN_CORRECTED:
                self._glued.append((bare, glued, phonetic_key(bare)))
        called = sorted(
            (unique[n.strip().lower()] for n in self.names if n.strip().lower() in unique),
            key=len,
            reverse=True,
        )
        either = "|".join(re.escape(name) for name in called)
        self._name_pair = (
            re.compile(rf"\b(?:{either})\b[,;]?\s+(?:{either})\b", re.IGNORECASE)
            if called
            else None
        )

    @classmethod
    def from_campaign(cls, campaign: CampaignNames, characters: Iterable[str] = ()) -> Vocabulary:
        """NPC names and aliases, then the players' characters, then entity names and aliases
        (places, factions, items)."""
        terms: list[str] = []
        for npc in campaign.npcs.values():
            terms += npc.names()
        names = list(terms)
        terms += characters
        for entity in campaign.entities.entities:
            terms += [entity.name, *entity.aliases]
        return cls(terms, names=names)

    def __bool__(self) -> bool:
        return bool(self.terms)

    def prompt(self) -> str:
        """Text for Whisper's ``initial_prompt``: the names, spelled right."""
        return "Names: " + ", ".join(self.terms) + "." if self.terms else ""

    def hotwords(self) -> str:
        return " ".join(self.terms)

    def may_hide_name(self, text: str) -> bool:
        """True when ``text`` names nobody yet has a name's slot ("Mardok, another ale", "Green
        and all, what happened", "Roll for me, Bar up"): a recognizer that misheard a name most
        often leaves it there."""
        if not self.names or self._named(text):
            return False
        slots = []
        chunks = [" ".join(chunk.split()) for chunk in text.split(",")]
        if len(chunks) > 1:
            for chunk in chunks[:-1]:  # the start: "Mardok, ...", also "Well, Mardok, ..."
                slots.append(chunk)
                if not _fillers_only(chunk):
                    break
            slots.append(chunks[-1].rstrip(".!? "))  # the end: "..., Bar up."
        words = text.split()
        for at in range(1, min(4, len(words))):  # the comma lost: "Ramin' Told me about ..."
            if words[at][:1].isupper() and words[at].split("'")[0] != "I":
                if not words[at - 1].endswith((".", "!", "?", ",")):
                    slots.append(" ".join(words[:at]))
                break
        return any(_SLOT_WORDS.fullmatch(slot) and not _fillers_only(slot) for slot in slots)

    def opening_names_nobody(self, text: str) -> bool:
        """``text`` opens with a name's slot that names nobody ("Mardok, how much..."): what a
        name heard early (``bot.audio.speech.name_slot``) may fill."""
        span = _opening_slot(text)
        return span is not None and not self._named(text[span[0] : span[1]])

    def opening_name(self, text: str) -> str | None:
        """The NPC name that ``text`` opens with, after any fillers ("Bartok." or "Well,
        Bartok, ..."), else None."""
        for chunk in re.split(r"[,.!?;:]", self.correct(text)):
            words = chunk.split()
            while words and words[0].lower() in _NOT_NAMES:
                words.pop(0)
            if words:
                said = " ".join(words).lower()
                return next((name for name in self.names if name.lower() == said), None)
        return None

    def with_opening_name(self, text: str, name: str) -> str | None:
        """``text`` with its opening slot, which names nobody, replaced by ``name``; None when
        it has no such slot or the result still leaves a name in doubt."""
        span = _opening_slot(text)
        if span is None or self._named(text[span[0] : span[1]]):
            return None
        named = text[: span[0]] + name + text[span[1] :]
        return None if self.may_hide_name(named) or self.lists_names(named) else named

    def repeats_a_name(self, text: str) -> bool:
        """A term said twice or more ("Captain Vessa, Captain Vessa"): Whisper looping on its
        prompt, not a player (who says a name once)."""
        lowered = self.correct(text).lower()
        return any(lowered.count(term.lower()) >= 2 for term in self.terms)

    def lists_names(self, text: str) -> bool:
        """Two names back to back ("Bartok, Whisper, what's on tap?"): in the pause after a name
        Whisper sometimes says another name of its prompt over the 10 s window (the 30 s
        window hears it right), and both NPCs would answer. A player who
        calls two NPCs at once is rare and only costs the second decode."""
        return self._name_pair is not None and bool(self._name_pair.search(self.correct(text)))

    def _named(self, text: str) -> bool:
        lowered = self.correct(text).lower()
        return any(re.search(rf"\b{re.escape(name.lower())}\b", lowered) for name in self.names)

    def correct(self, text: str) -> str:
        """Replace runs of words that sound like a vocabulary term with the term."""
        if not self.terms or not text:
            return text
        tokens = _TOKEN.findall(text)
        out: list[str] = []
        i = 0
        while i < len(tokens):
            match = self._best_match(tokens, i)
            if match is None:
                out.append(tokens[i])
                i += 1
                continue
            term, span = match
            trailing = re.search(r"[^\w']+$", tokens[i + span - 1])
            possessive = re.search(r"'s\W*$", tokens[i + span - 1])
            out.append(term + ("'s" if possessive else "") + (trailing.group() if trailing else ""))
            i += span
        corrected = " ".join(out)
        if corrected != text:
            log.debug("vocabulary: %r -> %r", text, corrected)
        return corrected

    def _best_match(self, tokens: list[str], start: int) -> tuple[str, int] | None:
        best: tuple[float, str, int] | None = None
        for span in (1, 2, 3):
            if start + span > len(tokens):
                break
            words = tokens[start : start + span]
            if span > 1 and (
                re.search(r"[.,;:!?]$", words[span - 2])
                or _LETTERS.sub("", words[0].lower()) in _STOPWORDS
            ):
                break  # never glue across punctuation or swallow "the"/"to" into a name
            glued = _LETTERS.sub("", "".join(words).lower().removesuffix("'s"))
            if len(glued) < 4:
                continue
            sound = phonetic_key(glued)
            for term, term_glued, term_sound in self._glued:
                if span == 1 and glued in (term_glued, term_glued + "s"):
                    continue  # already spelled right, or an ordinary word ("whispers")
                if abs(len(glued) - len(term_glued)) > 2:
                    continue
                score = max(
                    SequenceMatcher(None, glued, term_glued).ratio(),
                    SequenceMatcher(None, sound, term_sound).ratio(),
                )
                if score >= self.threshold and (best is None or score > best[0]):
                    best = (score, term, span)
        return None if best is None else (best[1], best[2])
