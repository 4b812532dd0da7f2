"""End of turn: when may a pause in a player's speech end their turn?

At each pause the lane asks the turn model how the utterance *sounds* (Smart Turn: falling
intonation, a finished phrase) and looks at what was *said* (the words up to the pause). Either
can say "not done": a trailing "and" or "um", words trailing off ("..."), or a name alone
("Bartok," then a breath before the question). A complete turn ends after ``complete_ms`` of
silence, an unfinished one only after ``incomplete_ms``. Where sound and words do not quite
vouch for each other the turn ends after ``unsure_ms``: a word or two that sound finished
("Great," then a breath before "pour me a pint"), or a whole question ("Bartok, is the stew any
good?") that the model, unsure of a voice it was not trained on, hears as unfinished, or that
Whisper, hearing it cut at the pause, closed with a comma instead of a question mark. Table
talk (a player whose words so far name no NPC) that sounds finished ends after
``table_talk_ms``: nobody waits for its answer, and a comma's breath sounds finished too
(with a shorter wait, "Upstairs, if the rooms are cheap, | otherwise in the stable again"
is cut at its comma). Without the model the lane keeps the plain VAD hangover. Pure and
synchronous, so every rule is easy to test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.settings.config import TurnConfig

__all__ = ["TurnEndPolicy", "TurnVerdict", "name_alone", "said_words", "unfinished_words"]

_WORD = re.compile(r"[a-z0-9']+")
#: Words a finished sentence does not end with: conjunctions, fillers, articles.
_DANGLING = frozenset(
    "and or but so because cause then if when while although though nor plus "
    "um umm uh uhh er erm ah eh hmm the a an".split()
)  # fmt: skip
#: Words that may stand next to a name without making it a request ("hey Bartok").
_CALLS = frozenset("hey hi hello oi okay ok so well oh um uh er excuse me".split())
_WHOLE_WORDS = 3
"""Fewer words than this ("Great.", "I did.") are often the start of a longer turn. Counted as
the recognizer wrote them: a misheard name comes back hyphenated ("Greymantle," as
"Brain-in-all."), and a rehearsal cut "Greymantle, what is your name?" there as three words."""
_TRAILING_OFF = ("...", "\u2026", ",", "-", "\u2014", ":", ";")
_QUESTION_AT_COMMA_WORDS = 4
_ASKS = frozenset(
    "who what where when why how which whose is are was were do does did can could will would "
    "shall should may have has any got what's who's where's how's when's why's".split()
)
"""Words a question opens with: Whisper writes a flat-voiced question with a period ("Bartok,
Any news from the docks.", which then waited out ``incomplete_ms`` in bench runs)."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("-", " "))


def unfinished_words(text: str, names: Iterable[str] = ()) -> str | None:
    """Why ``text`` reads as unfinished (None when it may be a whole turn).

    ``names``: the NPC names a player may call out before saying what they want.
    """
    stripped = text.strip()
    words = _words(stripped)
    if not words:
        return None
    if words[-1] in _DANGLING:
        return f'ends with "{words[-1]}"'
    if stripped.endswith(_TRAILING_OFF):
        return "trails off"
    if name_alone(stripped, names):
        return "a name alone"
    return None


def _whole_question(text: str) -> bool:
    """A sentence that asks: it ends with "?", or with a period after a question's opening
    word, at the start or after the name it is said to ("Bartok, any news from the docks.")."""
    stripped = text.rstrip()
    if stripped.endswith("?"):
        return True
    return stripped.endswith(".") and _asking_clause(stripped[:-1]) is not None


def _asking_clause(text: str) -> list[str] | None:
    """The words of ``text`` from a question's opening word on, when it opens with one at the
    start or right after the name it is said to ("Bartok, is the stew any good"); else None."""
    head, comma, rest = text.partition(",")
    opening = _words(head)
    if opening and opening[0] in _ASKS:
        return _words(text)
    after_name = _words(rest) if comma and len(opening) <= 2 else []  # "Bartok, any news ..."
    return after_name if after_name and after_name[0] in _ASKS else None


def _question_at_comma(text: str) -> bool:
    """A whole question Whisper closed with a comma ("Bartok, is the stew any good,"): cut at
    the pause, a flat question often gets one. It waited out ``incomplete_ms`` as trailing off
    and was the full table's slowest turn in bench runs. Four words from the question's opening
    word on at least ("what's on tap tonight"); "Bartok, what do you," ends on fewer."""
    stripped = text.rstrip()
    if not stripped.endswith(",") or stripped.endswith(",,"):
        return False
    clause = _asking_clause(stripped[:-1])
    return clause is not None and len(clause) >= _QUESTION_AT_COMMA_WORDS


def said_words(text: str | None) -> int:
    """Words in ``text`` as the recognizer wrote them (a misheard name comes back as one
    hyphenated word), a word written again right after itself counted once: Whisper heard one
    short "Great," at a pause as "Great. Great. Great. ..." fifteen times, a whole turn."""
    count, previous = 0, ""
    for token in (text or "").split():
        word = token.strip(".,!?;:\"'…").lower()
        if word != previous:
            count += 1
        previous = word
    return count


def name_alone(text: str, names: Iterable[str]) -> bool:
    """``text`` only calls out a name ("Bartok.", "hey Bartok,")."""
    name_words = {w for name in names for w in _words(name)}
    content = [w for w in _words(text) if w not in _CALLS]
    return bool(content) and all(w in name_words for w in content)


@dataclass(frozen=True, slots=True)
class TurnVerdict:
    """What the lane decided at one pause."""

    complete: bool
    wait_ms: float
    """Silence after the last voiced audio before the turn ends."""
    reason: str
    probability: float | None = None
    """The turn model's score (None: no model, or it was not asked)."""
    whole_question: bool = False
    """The words are a whole question and only the sound is in doubt: the turn is very likely
    over, it just waits ``unsure_ms`` in case the player goes on."""


class TurnEndPolicy:
    """Combines the turn model's score with the words, per ``speech.turn``; without a model,
    the plain VAD hangover (``hangover_ms``)."""

    def __init__(self, config: TurnConfig, hangover_ms: float, names: Iterable[str] = ()) -> None:
        self.config = config
        self.hangover_ms = float(hangover_ms)
        self.names = tuple(names)

    def fallback(self) -> TurnVerdict:
        """No turn model (switched off, missing or failed): the plain hangover."""
        return TurnVerdict(False, self.hangover_ms, "no turn model", None)

    def verdict(
        self, probability: float | None, text: str | None, *, table_talk: bool = False
    ) -> TurnVerdict:
        """``probability``: the model's score at the pause (None: it could not score, so the
        plain hangover applies); ``text``: the words up to the pause; ``table_talk``: the
        player is talking to no NPC (a finished sound waits ``table_talk_ms``)."""
        config = self.config
        if probability is None:
            return self.fallback()
        why = unfinished_words(text, self.names) if text else None
        if why == "trails off" and not table_talk and text and _question_at_comma(text):
            return TurnVerdict(
                True, config.unsure_ms, "a question at a comma", probability, whole_question=True
            )
        if why is not None:
            return TurnVerdict(False, config.incomplete_ms, why, probability)
        words = said_words(text)
        if probability >= config.threshold:
            if 0 < words < _WHOLE_WORDS:
                return TurnVerdict(True, config.unsure_ms, "a word or two", probability)
            if table_talk:
                return TurnVerdict(True, config.table_talk_ms, "table talk", probability)
            return TurnVerdict(True, config.complete_ms, "sounds finished", probability)
        if words >= _WHOLE_WORDS and text and _whole_question(text):
            return TurnVerdict(
                True, config.unsure_ms, "a whole question", probability, whole_question=True
            )
        return TurnVerdict(False, config.incomplete_ms, "sounds unfinished", probability)
