"""How much an NPC may say in one answer: a budget of words per tier, ended on a sentence.

A table hears every word in real time: a 922-word answer is five minutes of one NPC, whatever
the model thought it was doing. Each tier has a budget (FAST about one or two sentences,
STANDARD a short paragraph, DEEP a longer telling); an NPC's ``spoken_budget`` overrides it.
The engine asks the model for no more tokens than the budget needs (:func:`token_cap`) and
:class:`SpokenBudget` stops the answer at the last whole sentence that fits, so no answer is
ever unbounded, whichever model writes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from campaigns.basics import Tier
from npcs.clean_speech import words_of

__all__ = ["DEFAULT_SPOKEN_WORDS", "SpokenBudget", "budget_words", "token_cap"]

#: Words an answer may have at each tier unless the NPC says otherwise.
DEFAULT_SPOKEN_WORDS: dict[Tier, int] = {Tier.FAST: 30, Tier.STANDARD: 60, Tier.DEEP: 120}

#: Tokens the model may write per word of budget (English runs 1.3-1.5 tokens a word, plus
#: punctuation), and a floor for a tool call's arguments in a round that calls tools.
_TOKENS_PER_WORD = 2.0
_MIN_TOKENS = 48
_CLAUSE_END = re.compile(r"[,;:]\s|\s[—–-]\s")


def budget_words(overrides: dict[str, int | None] | None, tier: Tier) -> int:
    """The budget in words of an answer at ``tier``: the NPC's ``spoken_budget`` (a mapping of
    tier names to words, missing or None for the default) over :data:`DEFAULT_SPOKEN_WORDS`."""
    chosen = (overrides or {}).get(tier.name.lower())
    return chosen if chosen is not None else DEFAULT_SPOKEN_WORDS[tier]


def token_cap(words: int) -> int:
    """The ``max_tokens`` a round may ask for so that ``words`` words fit, and no more."""
    return max(_MIN_TOKENS, int(words * _TOKENS_PER_WORD) + 16)


@dataclass(slots=True)
class SpokenBudget:
    """Counts the words of one answer as its pieces are spoken.

    Attributes:
        words: the budget.
        spent: words spoken so far (fillers and the NPC's fallback line excluded).
        hit: the answer was cut: a piece did not fit, or the model ran out of tokens.
    """

    words: int
    spent: int = 0
    hit: bool = False

    @property
    def full(self) -> bool:
        """Nothing more may be said."""
        return self.hit or self.spent >= self.words

    def take(self, piece: str) -> str:
        """What of ``piece`` may be spoken: all of it while it fits; past the budget nothing,
        except for the answer's very first piece, which is cut at its last clause (or word)
        that fits and ended with a full stop, so the NPC never says nothing at all."""
        if self.full:
            self.hit = True
            return ""
        count = len(words_of(piece))
        if self.spent + count <= self.words:
            self.spent += count
            return piece
        self.hit = True
        if self.spent:
            return ""
        cut = _cut_to(piece, self.words)
        self.spent += len(words_of(cut))
        return cut

    def ran_out(self) -> None:
        """The model stopped at its token cap: the answer was cut."""
        self.hit = True


def _cut_to(piece: str, words: int) -> str:
    """The first ``words`` words of ``piece``, ended at the last clause mark within them if
    there is one past half the budget, with a full stop."""
    spans = list(re.finditer(r"\S+", piece))
    if len(spans) <= words:
        return piece
    head = piece[: spans[words - 1].end()]
    clauses = [m.start() for m in _CLAUSE_END.finditer(head)]
    if clauses and len(head[: clauses[-1]].split()) >= words // 2:
        head = head[: clauses[-1]]
    return head.rstrip(" ,;:—–-") + "."
