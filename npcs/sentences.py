"""Incremental sentence splitting of streamed LLM text, so TTS can start on the first sentence.

The one splitter of the project: engines use it to emit ``Sentence`` events, and the table
(``bot.table.session.turns``) and ``glyphoxa speech say`` split whole answers with it before the
voices speak them sentence by sentence (the speech stack itself is given sentences and knows no
NPC text). It never cuts after abbreviations ("Mr.", "e.g."), initials or a leading list number,
and a boundary is only certain once the whitespace after the terminator has arrived, so "3.5"
never splits.
"""

from __future__ import annotations

import re

__all__ = ["SentenceSplitter", "split_sentences"]

_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "st", "sr", "jr", "prof", "capt", "col", "gen", "lt", "sgt",
        "mt", "ft", "vs", "etc", "eg", "ie", "no", "vol", "approx", "inc", "ltd", "co", "lord",
        "lady", "sir", "rev", "fr",
    }
)  # fmt: skip
_CLOSERS = "\"')]}»”’"
# A terminator run, optional closing quotes/brackets, then whitespace: a candidate boundary.
_BOUNDARY = re.compile(r"([.!?…]+)([" + re.escape(_CLOSERS) + r"]*)(\s+)")
_CLAUSE = re.compile(r"([,;:]|\s[—–-])(\s+)")
_WORD_GAP = re.compile(r"\s+")
#: Words a phrase may start with: the first piece may end just before one of them.
_PHRASE_OPENERS = frozenset(
    "and but or so because since though although while when where if unless until as than "
    "that which who whom whose with without for from to of in on at by about into onto over "
    "under after before behind between through during near".split()
)  # fmt: skip
_LONGEST_FIRST_PHRASE = 4
"""Words past ``first_phrase_words`` after which the first piece ends at any word."""


class SentenceSplitter:
    """Feed text deltas with ``push``; get back the sentences they completed.

    ``flush`` returns whatever remains at the end of the stream. With ``first_clause_words`` set,
    the very first piece may end at a comma, semicolon, colon or dash once it has that many
    words: TTS time to first audio grows with the length of what it is given. With
    ``first_phrase_words`` set too, a first sentence that runs on without such a mark ends
    before the next phrase once it has that many words ("The dark ale is | on tap tonight."):
    on a slow model each word costs tens of milliseconds before the voice can start, and the
    rest of the sentence is written while the first piece is spoken. A phrase starts at a
    conjunction or preposition; past ``first_phrase_words`` + 4 words, at any word.
    """

    __slots__ = ("_buffer", "_emitted", "_first_clause_words", "_first_phrase_words", "_min_chars")

    def __init__(
        self,
        *,
        min_chars: int = 2,
        first_clause_words: int | None = None,
        first_phrase_words: int | None = None,
    ) -> None:
        self._buffer = ""
        self._min_chars = min_chars
        self._first_clause_words = first_clause_words
        self._first_phrase_words = first_phrase_words
        self._emitted = False

    def push(self, delta: str) -> list[str]:
        """Add a delta; return completed sentences (stripped, non-empty)."""
        if not delta:
            return []
        self._buffer += delta
        sentences = self._sentences()
        if not sentences and not self._emitted and self._first_clause_words:
            sentences = self._first_clause()
        if not sentences and not self._emitted and self._first_phrase_words:
            sentences = self._first_phrase()
        self._emitted = self._emitted or bool(sentences)
        return sentences

    def flush(self) -> str | None:
        """The unterminated rest of the stream, or None if nothing is left."""
        rest = self._buffer.strip()
        self._buffer = ""
        self._emitted = self._emitted or bool(rest)
        return rest or None

    def reopen(self) -> None:
        """The pieces so far were not said (clean speech dropped them): the next piece opens
        the answer again, as short as the first one may be."""
        self._emitted = False

    @property
    def pending(self) -> str:
        return self._buffer

    def _sentences(self) -> list[str]:
        sentences: list[str] = []
        search_from = 0
        while (match := _BOUNDARY.search(self._buffer, search_from)) is not None:
            candidate = self._buffer[: match.end(2)].strip()
            if len(candidate) >= self._min_chars and _is_real_boundary(
                self._buffer, match.start(1), match.group(1)
            ):
                sentences.append(candidate)
                self._buffer = self._buffer[match.end() :]
                search_from = 0
            else:
                search_from = match.end()
        return sentences

    def _first_clause(self) -> list[str]:
        assert self._first_clause_words is not None
        for clause in _CLAUSE.finditer(self._buffer):
            if len(self._buffer[: clause.start()].split()) >= self._first_clause_words:
                first = self._buffer[: clause.end(1)].strip()
                self._buffer = self._buffer[clause.end() :]
                return [first, *self._sentences()]
        return []

    def _first_phrase(self) -> list[str]:
        assert self._first_phrase_words is not None
        # Only words followed by whitespace are whole; the last, still growing, is not cut.
        words = _WORD_GAP.split(self._buffer.lstrip())
        whole = words[:-1]
        least = self._first_phrase_words
        for at in range(least, len(whole)):
            opener = whole[at].strip("\"'(“‘").lower()
            if opener in _PHRASE_OPENERS or at >= least + _LONGEST_FIRST_PHRASE:
                first = " ".join(whole[:at])
                self._buffer = " ".join(words[at:])
                return [first]
        return []


def _is_real_boundary(text: str, start: int, terminator: str) -> bool:
    """False after "Mr." / "e.g." / an initial ("J. R. R.") / a leading list number ("3.")."""
    if terminator != ".":
        return True
    before = text[:start]
    word = re.split(r"[\s(\[\"'“‘]", before)[-1]
    bare = word.replace(".", "")
    if bare.lower() in _ABBREVIATIONS:
        return False
    if len(bare) == 1 and bare.isalpha() and bare.isupper() and bare != "I":
        return False
    return not (bare.isdigit() and len(before.split()) <= 1)


def split_sentences(text: str) -> list[str]:
    """Split a complete text into sentences (same rules as streaming)."""
    splitter = SentenceSplitter()
    sentences = splitter.push(text)
    rest = splitter.flush()
    if rest:
        sentences.append(rest)
    return sentences
