"""Phrase lists compiled into one character-trie regex, with negation, for the tier selector.

Phrase syntax (the config's phrase lists use it too): words separated by spaces; each word of
four or more letters also matches its inflections ("remember" -> "remembered", "remembering");
``a|b`` offers alternatives for one word; ``*`` stands for one to three arbitrary words;
``word!`` is literal. Matching is case-insensitive and whole-word; a curly apostrophe matches a
straight one.

A match is *negated* when one of the few words before it in the same clause says so ("don't
think too hard", "no need to take your time", "you don't have to explain everything"): the
player asks for the opposite. "Why don't you ..." is a suggestion, not a negation. Phrases that
carry their own negation ("don't rush", "no hurry") are written as phrases and are not undone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from campaigns.errors import GlyphoxaError

__all__ = ["PhraseHit", "PhraseMatcher", "compile_phrases", "negated_by"]

_SUFFIXES = "(?:e|es|ed|d|s|ing|ings|ment|ments)?"
_PHRASE_TOKEN = re.compile(r"\S+")
_NO_INFLECTION = frozenset(
    "what when where which with about after before does have tell told this that there "
    "your from into them they their then than".split()
)

#: Words that undo a phrase when they come shortly before it in the same clause.
_NEGATION = re.compile(
    r"\b(?:don['’]?t|do not|doesn['’]?t|does not|didn['’]?t|not|never|no|needn['’]?t|without"
    r"|skip|forget|stop|never mind)\b",
    re.IGNORECASE,
)
_SUGGESTION = re.compile(r"\bwhy (?:don['’]?t|do not|not)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.,;:!?]")
_NEGATION_WORDS = 4  # how far back a negation reaches, in words


@dataclass(frozen=True, slots=True)
class PhraseHit:
    """A phrase found in a text: the words matched, and where."""

    text: str
    start: int
    end: int


def negated_by(text: str, start: int) -> str | None:
    """The negation in the last few words before ``start`` (same clause), if any."""
    before = text[max(0, start - 60) : start]
    if _NEGATION.search(before) is None:
        return None  # the common case, decided by one scan
    ends = [m.end() for m in _CLAUSE_END.finditer(before)]
    if ends:
        before = before[ends[-1] :]
    window = " ".join(before.split()[-_NEGATION_WORDS:])
    if not window or _SUGGESTION.search(window):
        return None
    found = _NEGATION.findall(window)
    return found[-1] if found else None


class PhraseMatcher:
    """One phrase list; ``find`` returns the first match that is not negated."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases = tuple(p for p in phrases if p.strip())
        self.pattern = compile_phrases(self.phrases)

    def find(self, text: str, lowered: str | None = None) -> PhraseHit | None:
        """The first match that is not negated (runs on every STT partial: keep it lean).

        ``lowered`` is ``text.lower()`` when the caller already has it.
        """
        if lowered is None:
            lowered = text.lower()
        match = self.pattern.search(lowered)
        while match is not None:
            start = match.start()
            if negated_by(text, start) is None:
                return PhraseHit(_original(text, lowered, match), start, match.end())
            match = self.pattern.search(lowered, match.end())
        return None

    def all_hits(self, text: str) -> list[tuple[PhraseHit, str | None]]:
        """Every match with the negation that undoes it (None: it counts). For ``--explain``."""
        lowered = text.lower()
        hits = []
        for m in self.pattern.finditer(lowered):
            hit = PhraseHit(_original(text, lowered, m), m.start(), m.end())
            hits.append((hit, negated_by(text, m.start())))
        return hits

    def sources(self, matched: str) -> list[str]:
        """The list entries that match exactly ``matched`` (which phrase decided)."""
        return [p for p in self.phrases if compile_phrases([p]).fullmatch(matched.lower())]


def _original(text: str, lowered: str, match: re.Match[str]) -> str:
    """The matched words as spoken (lowering kept every position unless non-ASCII changed)."""
    return text[match.start() : match.end()] if len(text) == len(lowered) else match.group(0)


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
