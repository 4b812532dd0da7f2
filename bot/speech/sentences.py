"""Cut streaming LLM text into sentences so the first one is spoken while the rest is written."""

from __future__ import annotations

import re

__all__ = ["SentenceStreamer", "split_sentences"]

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


def _is_real_boundary(text: str, start: int, punct: str) -> bool:
    """False for "Mr." / "e.g." / "J." initials / "3." in lists-with-numbers; True otherwise."""
    if punct != ".":
        return True
    before = text[:start]
    word = re.split(r"[\s(\[\"']", before)[-1]
    bare = word.replace(".", "").lower()
    if bare in _ABBREVIATIONS:
        return False
    if len(bare) == 1 and bare.isalpha():
        return False  # an initial: "J. R. R. Tolkien"
    return not (bare.isdigit() and len(before.split()) <= 1)


class SentenceStreamer:
    """Feed text deltas; get back each sentence as soon as its end is certain.

    A boundary is only certain once the whitespace after the terminator has arrived, so "3.5"
    and "Mr. Smith" never split. ``flush()`` returns whatever is left at the end of the stream.
    With ``first_clause_words`` set, the very first piece may end at a comma/semicolon/colon once
    it has that many words: TTS time-to-first-audio grows with the length of what it is given.
    """

    def __init__(self, *, min_chars: int = 2, first_clause_words: int | None = None) -> None:
        self._buffer = ""
        self._min_chars = min_chars
        self._first_clause_words = first_clause_words
        self._emitted = False

    def feed(self, delta: str) -> list[str]:
        self._buffer += delta
        sentences = self._sentences()
        if not sentences and not self._emitted and self._first_clause_words:
            for clause in _CLAUSE.finditer(self._buffer):
                if len(self._buffer[: clause.start()].split()) >= self._first_clause_words:
                    sentences = [self._buffer[: clause.end(1)].strip()]
                    self._buffer = self._buffer[clause.end() :]
                    sentences += self._sentences()
                    break
        self._emitted = self._emitted or bool(sentences)
        return sentences

    def _sentences(self) -> list[str]:
        sentences: list[str] = []
        search_from = 0
        while True:
            match = _BOUNDARY.search(self._buffer, search_from)
            if match is None:
                break
            end = match.end(2)
            candidate = self._buffer[:end].strip()
            if _is_real_boundary(self._buffer, match.start(1), match.group(1)) and (
                len(candidate) >= self._min_chars
            ):
                sentences.append(candidate)
                self._buffer = self._buffer[match.end() :]
                search_from = 0
            else:
                search_from = match.end()
        return sentences

    def flush(self) -> list[str]:
        rest = self._buffer.strip()
        self._buffer = ""
        self._emitted = self._emitted or bool(rest)
        return [rest] if rest else []


def split_sentences(text: str) -> list[str]:
    """Split finished text the same way the streamer would."""
    streamer = SentenceStreamer()
    return streamer.feed(text) + streamer.flush()
