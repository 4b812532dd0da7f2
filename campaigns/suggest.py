""" "Did you mean ...?" for every name a DM can misspell: keys, tools, voices, entity ids.

Plain edit distance picks badly among names that share a prefix: ``roll_dice`` is closer by
characters to ``roll_table`` than to ``roll``, yet the DM clearly meant the dice tool. So
candidates are ranked in bands first, and by similarity only within a band:

1. the same name in another case (``Roll`` -> ``roll``);
2. one name's words begin the other's (``roll_dice`` -> ``roll``, ``en_GB-alan`` ->
   ``en_GB-alan-medium``, ``dice`` -> ``dice.*``);
3. one name starts with the other (``search_rule`` -> ``search_rules``);
4. similar spelling (``difflib`` ratio of at least 0.6: ``rol_table`` -> ``roll_table``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean", "rank_choices"]

_WORD = re.compile(r"[a-z0-9]+")
_CUTOFF = 0.6


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _band(word: str, choice: str) -> int | None:
    lowered, other = word.lower(), choice.lower()
    if lowered == other:
        return 0
    mine, theirs = _words(word), _words(choice)
    shorter_words = min(len(mine), len(theirs))
    if shorter_words and mine[:shorter_words] == theirs[:shorter_words]:
        return 1
    shorter = min(len(lowered), len(other))
    if shorter >= 3 and (lowered.startswith(other) or other.startswith(lowered)):
        return 2
    if difflib.SequenceMatcher(None, lowered, other).ratio() >= _CUTOFF:
        return 3
    return None


def rank_choices(word: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """The best ``limit`` choices for ``word``, best first; unrelated choices are left out."""
    scored: list[tuple[int, float, str]] = []
    for choice in dict.fromkeys(choices):
        if choice == word:
            continue
        band = _band(word, choice)
        if band is None:
            continue
        ratio = difflib.SequenceMatcher(None, word.lower(), choice.lower()).ratio()
        scored.append((band, -ratio, choice))
    scored.sort()
    return [choice for _, _, choice in scored[:limit]]


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The single best choice for ``word``, or None when nothing is close."""
    ranked = rank_choices(word, choices, limit=1)
    return ranked[0] if ranked else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or an empty string."""
    best = closest(word, choices)
    return f"; did you mean '{best}'?" if best is not None else ""
