"""Phrase lists compiled into one character-trie regex, with negation, for the tier selector.

Phrase syntax (the config's phrase lists use it too): words separated by spaces; each word of
four or more letters also matches its inflections ("remember" -> "remembered", "remembering");
``a|b`` offers alternatives for one word; ``*`` stands for one to three arbitrary words;
``word!`` is literal. Matching is case-insensitive and whole-word; a curly apostrophe matches a
straight one.

A match is *negated* when one of the four words before it in the same clause says so ("don't
think too hard", "no need to take your time", "you don't have to explain everything"): the
player asks for the opposite. "Why don't you ..." is a suggestion, not a negation. Phrases that
carry their own negation ("don't rush", "no hurry") are written as phrases and are not undone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from campaigns.basics import GlyphoxaError

__all__ = ["PhraseHit", "PhraseMatcher", "TierPhrases", "compile_phrases", "negated_by"]

_SUFFIXES = "(?:e|es|ed|d|s|ing|ings|ment|ments)?"
_PHRASE_TOKEN = re.compile(r"\S+")
_NO_INFLECTION = frozenset(
    "what when where which with about after before does have tell told this that there "
    "your from into them they their then than".split()
)
#: Words that undo a phrase when they come shortly before it in the same clause (phrase syntax;
#: compiled like the lists, since it runs on every match of every partial).
_NEGATIONS = (
    "don't|dont|doesn't|doesnt|didn't|didnt|not|no|never|needn't|neednt|without|skip|forget|stop!",
    "do|does not!",
)
_SUGGESTION = re.compile(r"\bwhy (?:don['’]?t|do not|not)\b")
_CLAUSE_END = re.compile(r"[.,;:!?]")
_NEGATION_REACH = 4  # how far back a negation reaches, in words
_NEGATION_CHARS = 60


@dataclass(frozen=True, slots=True)
class PhraseHit:
    """A phrase found in a text: the words matched, and where."""

    text: str
    start: int
    end: int


def negation_at(lowered: str, start: int) -> str | None:
    """The negation among the few words before ``start`` in the same clause of ``lowered``."""
    low = max(0, start - _NEGATION_CHARS)
    if _NEGATION.search(lowered, low, start) is None:
        return None  # the common case, decided by one scan
    before = lowered[low:start]
    ends = [m.end() for m in _CLAUSE_END.finditer(before)]
    if ends:
        before = before[ends[-1] :]
    window = " ".join(before.split()[-_NEGATION_REACH:])
    if not window or _SUGGESTION.search(window):
        return None
    found = [m.group(0) for m in _NEGATION.finditer(window)]
    return found[-1] if found else None


def negated_by(text: str, start: int) -> str | None:
    """``negation_at`` for text as spoken (any case)."""
    return negation_at(text.lower(), start)


class PhraseMatcher:
    """One phrase list; ``find`` returns the first match that is not negated."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases = tuple(p for p in phrases if p.strip())
        self.pattern = compile_phrases(self.phrases)

    def find(self, text: str) -> PhraseHit | None:
        """The first match that is not negated."""
        lowered = text.lower()
        for match in self.pattern.finditer(lowered):
            if negation_at(lowered, match.start()) is None:
                return _hit(text, lowered, match)
        return None

    def all_hits(self, text: str) -> list[tuple[PhraseHit, str | None]]:
        """Every match with the negation that undoes it (None: it counts). For ``--explain``."""
        lowered = text.lower()
        return [
            (_hit(text, lowered, m), negation_at(lowered, m.start()))
            for m in self.pattern.finditer(lowered)
        ]

    def sources(self, matched: str) -> list[str]:
        """The list entries that match exactly ``matched`` (which phrase decided)."""
        return [p for p in self.phrases if compile_phrases([p]).fullmatch(matched.lower())]


class TierPhrases:
    """The DEEP and STANDARD lists scanned together: one pass over a partial finds the first
    DEEP phrase that counts, else the first STANDARD one (runs on every STT partial)."""

    def __init__(self, deep: Iterable[str], standard: Iterable[str]) -> None:
        self.deep = PhraseMatcher(deep)
        self.standard = PhraseMatcher(standard)
        self._any = compile_phrases([*self.deep.phrases, *self.standard.phrases])

    def find(self, text: str) -> tuple[PhraseHit | None, PhraseHit | None]:
        """(first DEEP hit that counts, or None; first STANDARD hit that counts, or None).

        The STANDARD hit is only reported when no DEEP phrase counts.
        """
        lowered = text.lower()
        deep_at = self.deep.pattern.match
        standard_at = self.standard.pattern.match
        standard = None
        match = self._any.search(lowered)
        while match is not None:
            start = match.start()
            negated = None
            found = deep_at(lowered, start)
            if found is not None:
                negated = negation_at(lowered, start)
                if negated is None:
                    return _hit(text, lowered, found), None
            if standard is None and negated is None:
                found = standard_at(lowered, start)
                if found is not None and negation_at(lowered, start) is None:
                    standard = _hit(text, lowered, found)
            match = self._any.search(lowered, match.end())
        return None, standard


def _hit(text: str, lowered: str, match: re.Match[str]) -> PhraseHit:
    """The matched words as spoken (lowering kept every position unless non-ASCII changed)."""
    start, end = match.span()
    words = text[start:end] if len(text) == len(lowered) else match.group(0)
    return PhraseHit(words, start, end)


def _inflectable(option: str, literal: bool) -> bool:
    return (
        not literal
        and len(option) >= 4
        and option.isalpha()
        and option not in _NO_INFLECTION
        and not option.endswith(("ed", "ing", "s"))
    )


def _word_options(word: str) -> list[tuple[str, str]]:
    """(literal stem, regex suffix) for each alternative of one phrase word."""
    literal = word.endswith("!")
    options = [w.lower() for w in word.rstrip("!").split("|") if w]
    out = []
    for option in options:
        if _inflectable(option, literal):
            stem = option[:-1] if option.endswith("e") else option
            out.append((stem, _SUFFIXES))
        else:
            out.append((option, ""))
    return out


def _word_pattern(word: str) -> str:
    if word == "*":
        return r"(?:\w+[\s,']+){0,2}\w+"
    parts = [_literal(stem) + suffix for stem, suffix in _word_options(word)]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _literal(text: str) -> str:
    return re.escape(text).replace("'", "['’]")


def _phrase_entries(phrase: str) -> list[tuple[str, str]]:
    """(first word's literal stem, regex for the rest) pairs; the stem feeds a character trie."""
    tokens = _PHRASE_TOKEN.findall(phrase.replace("’", "'"))
    if not tokens or tokens[0] == "*":
        raise GlyphoxaError(f"tier phrase {phrase!r} must start with a word")
    rest = "".join(r"\s+" + _word_pattern(token) for token in tokens[1:])
    return [(stem, suffix + rest) for stem, suffix in _word_options(tokens[0])]


def _trie_pattern(entries: list[tuple[str, str]], *, top: bool = False) -> str:
    """A regex whose alternatives branch on one character at a time.

    Python's ``re`` tries alternatives in order at each position; a flat list of 50 phrases
    costs 50 attempts per word, a character trie about one.
    """
    tails = sorted({tail for stem, tail in entries if not stem}, key=len, reverse=True)
    groups: dict[str, list[tuple[str, str]]] = {}
    for stem, tail in entries:
        if stem:
            groups.setdefault(stem[0], []).append((stem[1:], tail))
    branches = [
        _literal(char) + (_word_start(char) if top else "") + _trie_pattern(sub)
        for char, sub in sorted(groups.items())
    ]
    # Longer tails first so "rules for" wins over "rules"; an empty tail (end of phrase) last.
    alternatives = branches + [t for t in tails if t] + ([""] if "" in tails else [])
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"


def _word_start(char: str) -> str:
    """After the first character: it began a word (``\\b`` before it, as a lookbehind)."""
    return rf"(?<!\w{_literal(char)})" if re.match(r"\w", char) else ""


def compile_phrases(phrases: Iterable[str]) -> re.Pattern[str]:
    """One regex for a phrase list, whole words only, built as a trie; match lowercased text.

    The pattern starts with a plain literal per first character (the word boundary is checked
    by a lookbehind after it), so ``re`` skips every other position in C: case folding and a
    leading ``\\b`` would both defeat that and cost about half the time per partial.
    """
    entries = sorted({entry for p in phrases if p.strip() for entry in _phrase_entries(p)})
    if not entries:
        return re.compile(r"(?!x)x")
    return re.compile(_trie_pattern(entries, top=True) + r"\b")


_NEGATION = compile_phrases(_NEGATIONS)
