"""Incremental sentence splitting of streamed LLM text, so TTS can start on the first sentence.

An LLM streams tokens; speaking starts as soon as one sentence is complete. The splitter avoids
cutting after abbreviations ("Mr.", "e.g."), initials and decimal numbers, and holds back a
terminator until it sees what follows, because "3." may become "3.5".
"""

from __future__ import annotations

import re

__all__ = ["SentenceSplitter", "split_sentences"]

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st sr jr vs etc e.g i.e prof capt lt col gen sgt mt ft no approx".split()
)
# A terminator run ("." "?!" "...") followed by optional closing quotes/brackets, then whitespace.
_BOUNDARY = re.compile(r"([.!?…]+)([\"'”’)\]]*)(\s+)")
_MIN_CHARS = 2


class SentenceSplitter:
    """Feed text deltas with ``push``; get back the sentences they completed.

    ``flush`` returns whatever remains at the end of the stream.
    """

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = ""

    def push(self, delta: str) -> list[str]:
        """Add a delta; return completed sentences (stripped, non-empty)."""
        if not delta:
            return []
        self._buffer += delta
        sentences: list[str] = []
        start = 0
        for match in _BOUNDARY.finditer(self._buffer):
            end = match.end(2)
            candidate = self._buffer[start:end].strip()
            if len(candidate) < _MIN_CHARS or _ends_with_abbreviation(candidate, match.group(1)):
                continue
            sentences.append(candidate)
            start = match.end(3)
        if start:
            self._buffer = self._buffer[start:]
        return sentences

    def flush(self) -> str | None:
        """The unterminated rest of the stream, or None if nothing is left."""
        rest = self._buffer.strip()
        self._buffer = ""
        return rest or None

    @property
    def pending(self) -> str:
        return self._buffer


def _ends_with_abbreviation(candidate: str, terminator: str) -> bool:
    if terminator != ".":
        return False
    words = candidate[:-1].rsplit(None, 1)
    last = (words[-1] if words else "").lstrip("\"'(“‘")
    if last.lower() in _ABBREVIATIONS:
        return True
    # A single capital letter is an initial ("J. R. R. Tolkien"), not a sentence end; "I." is.
    return len(last) == 1 and last.isupper() and last != "I"


def split_sentences(text: str) -> list[str]:
    """Split a complete text into sentences (same rules as streaming)."""
    splitter = SentenceSplitter()
    sentences = splitter.push(text)
    rest = splitter.flush()
    if rest:
        sentences.append(rest)
    return sentences
