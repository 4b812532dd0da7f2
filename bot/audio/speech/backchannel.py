"""Recognize listener noises ("mhm", "uh-huh", "yeah") that are neither a turn nor a barge-in."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["BackchannelDetector"]

# Spellings Whisper produces for the same sounds, added to whatever the config lists.
# A lone "well" or "er" is a hesitation too, a lone "wow" or "ow" a reaction, and Whisper often
# hears a short "uh-huh" as "Well...", "Wow." or "Ow.".
_VARIANTS = (
    "mm hmm", "mmhmm", "mhmm", "hmm", "hm", "mm", "uh huh", "uhhuh", "ah", "oh", "uh", "um",
    "er", "erm", "well", "wow", "whoa", "ow", "ooh", "aha", "ha",
)  # fmt: skip
_WORD = re.compile(r"[a-z']+")


def _normalize(text: str) -> str:
    return " ".join(_WORD.findall(text.lower().replace("-", " ")))


class BackchannelDetector:
    """``is_backchannel(text)``: every word is a listener noise (or there are none at all)."""

    def __init__(self, phrases: Iterable[str]) -> None:
        normalized = {_normalize(p) for p in (*phrases, *_VARIANTS)}
        self._phrases = {p for p in normalized if p}
        self._words = {w for p in self._phrases for w in p.split()}

    def is_backchannel(self, text: str) -> bool:
        """True for "Mm-hmm.", "Yeah, yeah." and empty text; False once a real word appears."""
        normalized = _normalize(text)
        if normalized in self._phrases:
            return True
        return all(word in self._words for word in normalized.split())

    def has_content(self, text: str) -> bool:
        """At least one word that is not a listener noise."""
        return bool(_normalize(text)) and not self.is_backchannel(text)
