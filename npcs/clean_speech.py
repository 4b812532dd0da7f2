"""Clean speech: the stage between an NPC's model and its voice that lets only the line through.

Whatever model answers, what reaches the voice and the transcript is the NPC's own line: no
role labels ("The player: ...", "Arin (Greymantle: ..."), no prompt scaffolding ("I'll make it
concise and avoid mentioning ..."), no echo of the player's words, no line already said at the
table (by this NPC or copied from another),
no emoji or markdown, no stage directions (``*wipes a mug*``, ``(laughs)``) unless the NPC's
YAML allows ``emotes``, and never "as an AI / a language model". A piece that fails is repaired
(cut to its clean part) or dropped; every repair is counted by kind, for the turn's record, the
rehearsal report and the DM's console. Pure text work, microseconds a piece, so it runs on every
piece of every answer, streamed or not. Regenerating an answer with nothing clean left and the
NPC's fallback line are the engine's (``npcs.engines.cascaded``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from npcs.speech_patterns import (
    BRACKETED,
    BROKEN,
    BROKEN_ANY_CASE,
    DICE,
    ECHO_RUN,
    ECHO_SHARE,
    FACT_LABEL,
    FACT_TAGS,
    LINK,
    MARKDOWN,
    MIN_KEPT_WORDS,
    NAME_LABEL,
    NESTED_LABEL,
    NUMBER,
    OPENERS,
    REPEAT_RUN,
    REPEAT_SHARE,
    ROLE_LABEL,
    SCAFFOLDING,
    SENTENCE_END,
    SPACES,
    STARRED,
    TEMPLATE_GRAMS,
    TEMPLATE_HEADS,
    TEMPLATE_RUN,
    URL,
    covered_words,
    cut_words,
    is_emoji,
    shared_runs,
    tidy,
    word_runs,
    words_of,
)

__all__ = ["REPAIR_KINDS", "LineCleaner", "SpeechContext", "words_of"]

#: Every kind of repair, in the order reports list them.
REPAIR_KINDS = (
    "label",
    "scaffolding",
    "echo",
    "repeat",
    "broken character",
    "stage direction",
    "emoji",
    "markdown",
    "contradicts the roll",
    "regenerated",
    "fallback",
)


@dataclass(frozen=True, slots=True)
class SpeechContext:
    """What one turn's cleaning needs to know.

    Attributes:
        heard: the player's words this turn (an echo of them is never spoken).
        speakers: everyone else at the table (players, other NPCs): a piece opening with their
            name as a label is another speaker's line.
        own: the NPC's name and aliases (its own "Name:" label is only stripped).
        earlier: what NPCs said earlier in the scene. A line is not said twice, and a small
            model's favourite failure, another NPC's last line copied word for word, is not
            said either.
        grounding: what the turn was given to tell (recalled facts, tool results, the
            entities it knows): a sentence saying mostly that, in its words, is not a copy of an
            earlier line that said the same fact.
        asked_before: the players' earlier lines in the scene: a sentence that is mostly one of
            them ("What's on tap tonight?" said back a minute later) is an echo too.
        emotes: the NPC's YAML allows stage directions (``*laughs*`` is then kept).
        roll_total: this turn's roll, already spoken: a piece naming another number is dropped.
    """

    heard: str = ""
    speakers: Sequence[str] = ()
    own: Sequence[str] = ()
    earlier: Sequence[str] = ()
    grounding: Sequence[str] = ()
    asked_before: Sequence[str] = ()
    emotes: bool = False
    roll_total: int | None = None


@dataclass(slots=True)
class LineCleaner:
    """Cleans the pieces of one turn in order; ``repairs`` counts what it did, by kind."""

    context: SpeechContext
    repairs: Counter[str] = field(default_factory=Counter)
    _said: set[str] = field(default_factory=set)
    _this_turn: set[str] = field(default_factory=set)
    """The sentences of this answer so far, however short."""
    _said_runs: set[tuple[str, ...]] = field(default_factory=set)
    """Every :data:`REPEAT_RUN` consecutive words of the lines in ``_said``."""
    _grounded_runs: set[tuple[str, ...]] = field(default_factory=set)
    """Every three consecutive words of the turn's grounding (short facts count too)."""
    _asked: set[str] = field(default_factory=set)
    _asked_runs: set[tuple[str, ...]] = field(default_factory=set)
    """The players' earlier sentences, and every :data:`ECHO_RUN` consecutive words of them."""
    _names: re.Pattern[str] | None = field(default=None)
    _own: frozenset[str] = field(default_factory=frozenset)
    _open: str | None = None
    """The closing mark of a stage direction still open from the last piece."""
    _rest_of_dropped: bool = False
    """The last piece was dropped mid-sentence ("As an AI language model," then "I cannot
    pour ale."): the rest of that sentence goes with it."""

    def __post_init__(self) -> None:
        for line in self.context.earlier:
            self._remember(line)
        for text in self.context.grounding:
            self.ground(text)
        for line in self.context.asked_before:
            for sentence in _SENTENCE_BREAK.split(line):
                words = words_of(sentence)
                self._asked.add(" ".join(words))
                self._asked_runs.update(word_runs(words, ECHO_RUN))
        self._own = frozenset(n.strip().lower() for n in self.context.own if n.strip())
        names = sorted(
            {n.strip() for n in [*self.context.speakers, *self.context.own] if n.strip()},
            key=len,
            reverse=True,
        )
        if names:
            alternatives = "|".join(re.escape(n) for n in names)
            self._names = re.compile(
                rf"(?:^|(?<=[\s\"'(]))({alternatives})(?:\s*\([^)]{{0,40}}\))?"
                r"(?:\s+sa(?:ys|id)(?:\s+to\s+\w+)?)?\s*:",
                re.IGNORECASE,
            )

    def clean(self, piece: str) -> str:
        """The speakable part of ``piece``; empty when nothing of it may be said."""
        ends = SENTENCE_END.search(piece.strip()) is not None
        if self._rest_of_dropped:
            self._rest_of_dropped = not ends
            return ""
        cleaned = self._clean(piece)
        self._rest_of_dropped = not cleaned and not ends and bool(words_of(piece))
        return cleaned

    def _clean(self, piece: str) -> str:
        text = self._markdown(piece)
        text = SPACES.sub(" ", text).strip()
        if not text:
            return ""
        for step in (
            self._labels,
            self._second_person_self,
            self._own_vocative,
            self._stage_directions,
            self._emoji,
            self._broken_character,
            self._scaffolding,
            self._template,
            self._echo,
            self._asked_before,
            self._contradiction,
            self._repeat,
        ):
            text = step(text)
            if not text:
                return ""
        text = tidy(text)
        if not re.search(r"[A-Za-z0-9]", text):
            return ""
        if text.endswith(":") and len(words_of(text)) <= _DANGLING_INTRO_WORDS:
            self.repairs["label"] += 1  # "you said:", what it introduced was cut or never came
            return ""
        self._remember(text)
        self._this_turn.add(" ".join(words_of(text)))
        return text

    def remember(self, line: str) -> None:
        """A line said this turn without cleaning (the table's own): never said again."""
        self._remember(line)

    def ground(self, text: str) -> None:
        """``text`` was given to this turn to tell (a tool's result as it arrives)."""
        self._grounded_runs.update(word_runs(words_of(text), _GROUND_RUN))

    def _remember(self, line: str) -> None:
        for sentence in [line, *_SENTENCE_BREAK.split(line)]:
            words = words_of(sentence)
            if words:
                self._said.add(" ".join(words))
                self._said_runs.update(word_runs(words))

    def count(self, kind: str, times: int = 1) -> None:
        """Count a repair made outside the cleaner (a regenerated answer, the fallback line)."""
        self.repairs[kind] += times

    def summary(self) -> tuple[tuple[str, int], ...]:
        """The repairs made, in :data:`REPAIR_KINDS` order."""
        return tuple((kind, self.repairs[kind]) for kind in REPAIR_KINDS if self.repairs[kind])

    # -- steps: each returns the text left ("" drops the piece) ----------------------------

    def _labels(self, text: str) -> str:
        """A leading label of the NPC's own name or a role is stripped; another speaker's label
        starts their line, so the piece ends there (nothing of it when it opens with one). A
        campaign fact's "Name (location):" keeps its name."""
        text, facts = FACT_LABEL.subn(" —", text)
        self.repairs["label"] += facts
        while True:
            found = self._first_label(text)
            if found is None:
                return text
            start, end, own = found
            self.repairs["label"] += 1
            if start == 0 or not text[:start].strip(" \"'(“"):
                if not own:
                    return ""
                text = text[end:].lstrip(" \"'“")
                continue
            if own:  # "Sure! Here's my response: ...": what follows the label is the line
                text = text[end:].lstrip(" \"'“")
                continue
            text = text[:start].rstrip()
            return text if len(words_of(text)) >= MIN_KEPT_WORDS else ""

    def _second_person_self(self, text: str) -> str:
        """ "You are Bartok, a stout dwarf...": the model reading its persona back."""
        lowered = text.lower()
        for name in self._own:
            if re.search(rf"\byou(?:'re| are) {re.escape(name)}\b", lowered):
                self.repairs["scaffolding"] += 1
                return ""
        return text

    def _own_vocative(self, text: str) -> str:
        """ "Bart, you're..." said by Bartok: small models address themselves as they were
        addressed; the name is dropped."""
        lowered = text.lower()
        for name in sorted(self._own, key=len, reverse=True):
            if lowered.startswith(name) and lowered[len(name) : len(name) + 1] in (",", "!"):
                self.repairs["label"] += 1
                return text[len(name) + 1 :].lstrip()
        return text

    def _first_label(self, text: str) -> tuple[int, int, bool] | None:
        found: list[tuple[int, int, bool]] = []
        if self._names is not None and (match := self._names.search(text)):
            found.append((match.start(), match.end(), match.group(1).lower() in self._own))
        if match := ROLE_LABEL.search(text):
            found.append((match.start(), match.end(), match.group(1) is None))
        if match := NESTED_LABEL.search(text):
            found.append((match.start(), match.end(), match.group(1).lower() in FACT_TAGS))
        if not found and (match := NAME_LABEL.search(text)):
            found.append((match.start(), match.end(), False))  # a speaker it made up
        return min(found) if found else None

    def _markdown(self, text: str) -> str:
        cleaned = URL.sub("", LINK.sub(r"\1", text))
        cleaned = MARKDOWN.sub(" ", cleaned)
        if not self.context.emotes:
            # a single starred word inside a sentence is emphasis, not a stage direction
            cleaned = re.sub(r"(?<=\w )\*{1,2}(\w+)\*{1,2}(?=[\s,.!?])", r"\1", cleaned)
        cleaned = cleaned.replace("#", " ").replace("~", " ").replace("|", " ")
        if cleaned != text:
            self.repairs["markdown"] += 1
        return cleaned.strip()

    def _stage_directions(self, text: str) -> str:
        """Starred and bracketed asides go; one left open at a piece's end goes on into the next
        piece ("*wipes the bar and smiles." then "* Welcome!")."""
        if self.context.emotes:
            return text
        cleaned = text
        if self._open is not None:
            close = cleaned.find(self._open)
            cleaned = "" if close < 0 else cleaned[close + 1 :]
            self._open = None if close >= 0 else self._open
        cleaned = BRACKETED.sub(" ", STARRED.sub(" ", cleaned))
        openers = [(cleaned.find(mark), closer) for mark, closer in OPENERS if mark in cleaned]
        if openers:
            at, closer = min(openers)
            cleaned, self._open = cleaned[:at], closer
        cleaned = cleaned.replace(")", " ").replace("]", " ")
        if cleaned != text:
            self.repairs["stage direction"] += 1
        return cleaned.strip()

    def _emoji(self, text: str) -> str:
        cleaned = "".join(ch for ch in text if not is_emoji(ch))
        if cleaned != text:
            self.repairs["emoji"] += 1
        return cleaned

    def _broken_character(self, text: str) -> str:
        if BROKEN.search(text) or BROKEN_ANY_CASE.search(text):
            self.repairs["broken character"] += 1
            return ""
        return text

    def _scaffolding(self, text: str) -> str:
        match = SCAFFOLDING.search(text)
        if match is None:
            return text
        self.repairs["scaffolding"] += 1
        before = text[: match.start()]
        # keep a clean sentence before it, never the clause that leads into it
        cut = max(before.rfind(". "), before.rfind("! "), before.rfind("? "))
        kept = before[: cut + 1] if cut >= 0 else ""
        return kept if len(words_of(kept)) >= MIN_KEPT_WORDS else ""

    def _template(self, text: str) -> str:
        """Four words in a row of the prompt's own wording: the prompt leaking into speech."""
        words = words_of(text)
        grams = TEMPLATE_GRAMS
        if not any(
            tuple(words[i : i + TEMPLATE_RUN]) in grams
            for i in range(len(words) - TEMPLATE_RUN + 1)
        ):
            return text
        self.repairs["scaffolding"] += 1
        return ""

    def unfinished(self, piece: str) -> bool:
        """``piece`` ends mid-sentence on words that may begin an echo of the player or of the
        prompt ("The catch today was a bucket" before "of mackerel"), or repeats words already
        said at the table: hold it until the next piece shows whether the sentence does."""
        if SENTENCE_END.search(piece.strip()):
            return False
        words = words_of(piece)
        if any(covered_words(words, self._said_runs, REPEAT_RUN)):
            return True  # "I have read that a", as an earlier line opened: the sentence decides
        heard = words_of(self.context.heard)
        heads = {tuple(heard[i : i + n]) for n in (2, 3) for i in range(len(heard) - n + 1)}
        heads |= TEMPLATE_HEADS
        return any(tuple(words[-n:]) in heads for n in (2, 3) if len(words) >= n)

    def _echo(self, text: str) -> str:
        heard = words_of(self.context.heard)
        if not heard:
            return text
        said = words_of(text)
        run = min(ECHO_RUN, len(heard))
        spans = shared_runs(said, heard, run)
        if not spans:
            return text
        self.repairs["echo"] += 1
        echoed = sum(b - a for a, b in spans)
        if len(said) - echoed < MIN_KEPT_WORDS + 1 or echoed >= ECHO_SHARE * len(said):
            return ""  # mostly the player's words: nothing of it is the NPC's own line
        return cut_words(text, spans)

    def _asked_before(self, text: str) -> str:
        """A sentence mostly in a player's earlier words goes whole (a few of them reused in an
        answer are fine; a fact the turn was given is the NPC's to tell in any words)."""
        words = words_of(text)
        if len(words) < 3:
            return text
        if len(words) < ECHO_RUN and " ".join(words) in self._asked:
            self.repairs["echo"] += 1
            return ""
        return self._unless_copied(text, words, self._asked_runs, ECHO_RUN, "echo")

    def _contradiction(self, text: str) -> str:
        total = self.context.roll_total
        if total is None:
            return text
        numbers = {int(n) for n in NUMBER.findall(DICE.sub(" ", text))}
        if numbers and numbers != {total}:
            self.repairs["contradicts the roll"] += 1
            return ""
        return text

    def _repeat(self, text: str) -> str:
        """A sentence already said at the table, whole or mostly in long runs of its words
        ("Mara, I'm glad you're enjoying the catch today." after another NPC's "I'm glad
        you're enjoying the catch today, Jeb."), is not said again."""
        words = words_of(text)
        if " ".join(words) in self._this_turn:  # "Aimless. Aimless.": never twice in an answer
            self.repairs["repeat"] += 1
            return ""
        if len(words) < 3:
            return text
        if len(words) < REPEAT_RUN:
            if " ".join(words) in self._said:
                self.repairs["repeat"] += 1
                return ""
            return text
        return self._unless_copied(text, words, self._said_runs, REPEAT_RUN, "repeat")

    def _unless_copied(
        self, text: str, words: list[str], runs: set[tuple[str, ...]], run: int, kind: str
    ) -> str:
        """``text``, or nothing when most of its words lie in ``runs`` (counted as ``kind``);
        a fact the turn was given, told again, is not a copy: its words do not count."""
        found = covered_words(words, runs, run)
        given = covered_words(words, self._grounded_runs, _GROUND_RUN)
        if sum(f and not g for f, g in zip(found, given, strict=True)) >= REPEAT_SHARE * len(words):
            self.repairs[kind] += 1
            return ""
        return text


#: A piece this short that ends on a colon only introduced what follows ("you said:").
_DANGLING_INTRO_WORDS = 3
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
#: Consecutive words of what a turn was given to tell that mark a word as that fact's.
_GROUND_RUN = 3
