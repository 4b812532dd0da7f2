"""One round of the cascaded engine's tool loop, spoken while it arrives.

A round is one chat completion: its text passes the :class:`~npcs.engines.guard.ContentGuard`
(never another speaker's line, never a tool call written as text), is cut into sentences, each
cleaned (:mod:`npcs.clean_speech`) and counted against the answer's spoken budget
(:mod:`npcs.spoken_budget`), and handed out as :class:`~npcs.engines.events.Sentence` events at
once, so TTS speaks the first sentence while the model still writes the rest; the round's tool
calls are collected for the loop. What happens between rounds (asking again, a filler, running
the tools, the follow-up prompt) is :mod:`npcs.engines.cascaded`'s; this module only reads what
one round said.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from npcs.clean_speech import LineCleaner, SpeechContext
from npcs.engines.chat_wire import completion_parts, merge_tool_delta
from npcs.engines.events import EngineEvent, FirstToken, Sentence, TurnRequest
from npcs.engines.guard import ContentGuard
from npcs.engines.table_actions import TableActions
from npcs.sentences import SentenceSplitter, split_sentences
from npcs.speech_patterns import words_of
from npcs.spoken_budget import SpokenBudget, budget_words
from tools.host.types import ToolCall, ToolResult

__all__ = ["RoundReader", "TurnSpeech", "asked_before", "said_before", "turn_speech"]

log = logging.getLogger(__name__)

#: Words before a comma that may end the first spoken piece of a turn; without a comma, words
#: before the next phrase (a conjunction or preposition): the voice starts sooner.
_FIRST_CLAUSE_WORDS = 4
_NOTHING_CLEAN_CHARS = 100
"""Characters of pieces clean speech dropped (about 25 tokens) after which a turn that has
still said nothing stops reading its round: everything so far was unspeakable (an echo,
another speaker's line, a repeat), so the rest rarely is better, and asking again now costs
less than the rest of the sample. An answer asked again cost a whole sample first: the slowest
FAST turns of ``bench e2e`` (the first piece 0.8-0.9 s after the first token, against
0.1-0.3 s). A sentence still being written is not judged yet, so it is never cut for its
length."""


@dataclass(slots=True)
class TurnSpeech:
    """What one turn has said so far, over all its rounds.

    Attributes:
        heard: the player's words; a sentence that only repeats them is never spoken.
        prefix: words already spoken before this engine took over (the sentence cascade's
            opener), or None.
        cleaner: what lets only the NPC's clean line through (the default knows only
            ``heard``).
        budget: the answer's spoken budget (default: none).
        spoken: the sentences handed out, in order.
    """

    heard: str
    prefix: str | None = None
    cleaner: LineCleaner | None = None
    budget: SpokenBudget = field(default_factory=lambda: SpokenBudget(1_000_000))
    spoken: list[str] = field(default_factory=list)
    _first: bool = field(init=False)
    _held: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self._first = self.prefix is None  # a continued turn has had its first token
        if self.cleaner is None:
            self.cleaner = LineCleaner(SpeechContext(heard=self.heard))
        if self.prefix:
            self.budget.take(self.prefix)

    def first_token(self) -> bool:
        """True once, when the turn's first token (text or tool call) arrives."""
        first, self._first = self._first, False
        return first

    @property
    def opening(self) -> bool:
        """Nothing of the turn was spoken yet: the next piece opens it."""
        return not self.spoken and self.prefix is None

    @property
    def full(self) -> bool:
        """The spoken budget is used up: nothing more is said."""
        return self.budget.full

    def say(self, pieces: Iterable[str], *, final: bool = False) -> Iterator[Sentence]:
        """The pieces that are clean and fit the budget, each remembered as spoken. A piece
        that ends on words that may begin an echo is held until the next piece (or the end of
        the round, ``final``) shows whether they do."""
        assert self.cleaner is not None
        for piece in pieces:
            if self._held:
                piece, self._held = f"{self._held} {piece}", ""
            if self.cleaner.unfinished(piece):
                self._held = piece  # said with the next piece
                continue
            yield from self._speak(piece)
        if final and self._held:
            held, self._held = self._held, ""
            yield from self._speak(held)

    def forget_held(self) -> None:
        """Drop a piece held for the next one: its round was cut and asked again."""
        self._held = ""

    def _speak(self, piece: str) -> Iterator[Sentence]:
        assert self.cleaner is not None
        if self.budget.full:
            self.budget.hit = True
            return
        text = self.budget.take(self.cleaner.clean(piece))
        if text:
            self.spoken.append(text)
            yield Sentence(text)

    def say_ours(self, line: str) -> Iterator[Sentence]:
        """A line the table wrote (a roll's number): not the model's, so not cleaned, but
        within the budget like every word."""
        assert self.cleaner is not None
        text = self.budget.take(line)
        if text:
            self.cleaner.remember(text)
            self.spoken.append(text)
            yield Sentence(text)

    def said(self) -> str:
        """The whole turn as spoken, the prefix included."""
        return " ".join(([self.prefix] if self.prefix else []) + self.spoken).strip()

    def ground(self, results: Sequence[ToolResult]) -> None:
        """The model's own tool results are what the answer may tell (clean speech lets a fact
        from them be said again in their words)."""
        if self.cleaner is not None:
            for result in results:
                if not result.is_error:
                    self.cleaner.ground(result.content)


def said_before(request: TurnRequest) -> list[str]:
    """The scene's NPC lines a new answer must not copy. The answers to the same words asked
    before are left out: asked again, an NPC may answer again."""
    asked = " ".join(words_of(request.text))
    lines: list[str] = []
    answering_the_same = False
    for line in request.scene:
        if line.npc is None:
            answering_the_same = bool(asked) and " ".join(words_of(line.text)) == asked
        elif not answering_the_same:
            lines.append(line.text)
    return lines


def asked_before(request: TurnRequest) -> list[str]:
    """The players' earlier lines in the scene: an answer must not say one of them back."""
    return [line.text for line in request.scene if line.npc is None]


def turn_speech(
    request: TurnRequest, names: list[str], actions: TableActions, prefix: str | None
) -> TurnSpeech:
    """What one turn will say, cleaned for this table (``names``: everyone whose line the
    model might write) and within the NPC's spoken budget at the turn's tier."""
    npc = request.npc
    own = [npc.name, *npc.aliases]
    context = SpeechContext(
        heard=request.text if not request.reacting_to else "",
        speakers=[name for name in names if name not in own],
        own=own,
        earlier=[*said_before(request), *([prefix] if prefix else [])],
        grounding=[*actions.facts, request.entity_snapshot or ""],
        asked_before=asked_before(request),
        emotes=npc.emotes,
        roll_total=actions.roll_total,
    )
    budget = SpokenBudget(budget_words(npc.spoken_budget.model_dump(), request.tier))
    return TurnSpeech(request.text, prefix, cleaner=LineCleaner(context), budget=budget)


class RoundReader:
    """Reads one round's answer, unstreamed (:meth:`complete`) or streamed (:meth:`stream`,
    then :meth:`end_stream` once the stream is closed).

    Attributes:
        guard: what keeps other speakers' lines and written-out tool calls from being spoken;
            ``guard.held`` is what it kept back.
        raw: the model's text as written (logs and the usage estimate of a cut-off stream).
        content: the text as the guard let it through (what goes back to the model).
        calls: the round's tool calls.
        usage: the usage the server reported for a streamed round, if any.
    """

    def __init__(self, guard: ContentGuard, speech: TurnSpeech) -> None:
        self.guard = guard
        self.speech = speech
        self.raw: list[str] = []
        self.content: list[str] = []
        self.calls: list[ToolCall] = []
        self.usage: Any = None
        self.cut_off = False
        """The model stopped at its token cap (``finish_reason`` "length")."""
        self.nothing_clean = False
        """Stopped reading: ``_NOTHING_CLEAN_CHARS`` of pieces dropped, nothing said yet."""
        self._slots: dict[int, dict[str, str]] = {}
        self._splitter = SentenceSplitter()

    def _count_labels(self) -> None:
        """The guard's cut labels count as clean speech's repairs (once per round)."""
        if self.guard.labels and self.speech.cleaner is not None:
            self.speech.cleaner.count("label", self.guard.labels)
            self.guard.labels = 0

    def complete(self, response: Any) -> Iterator[EngineEvent]:
        """An unstreamed round: the whole answer at once."""
        text, self.calls = completion_parts(response)
        self.raw.append(text)
        choices = getattr(response, "choices", None) or []
        self.cut_off = bool(choices) and getattr(choices[0], "finish_reason", None) == "length"
        if (text or self.calls) and self.speech.first_token():
            yield FirstToken()
        text = (self.guard.push(text) + self.guard.flush()).strip() if text else ""
        self._count_labels()
        if text:
            self.content.append(text)
            pieces = split_sentences(text)
            if self.cut_off and len(pieces) > 1 and not _ends_sentence(pieces[-1]):
                pieces.pop()  # the unfinished last sentence of an answer cut at its cap
                self.speech.budget.ran_out()
            yield from self.speech.say(pieces, final=True)

    async def stream(self, chunks: Any) -> AsyncGenerator[EngineEvent, None]:
        """A streamed round: each sentence leaves as soon as it is complete; stops reading at
        another speaker's line. The caller closes the stream (whatever ended the reading)."""
        # The turn's very first piece may end at a comma: TTS starts sooner.
        clause = _FIRST_CLAUSE_WORDS if self.speech.opening else None
        self._splitter = SentenceSplitter(first_clause_words=clause, first_phrase_words=clause)
        dropped = 0
        async for chunk in chunks:
            self.usage = getattr(chunk, "usage", None) or self.usage
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if getattr(chunk.choices[0], "finish_reason", None) == "length":
                self.cut_off = True
            if (delta.content or delta.tool_calls) and self.speech.first_token():
                yield FirstToken()
            if delta.content:
                self.raw.append(delta.content)
                safe = self.guard.push(delta.content)
                self.content.append(safe)
                pieces = self._splitter.push(safe)
                for sentence in self.speech.say(pieces):
                    yield sentence
                if pieces and self.speech.opening:  # none of them was said
                    dropped += sum(len(piece) for piece in pieces)
                    if clause:
                        self._splitter.reopen()  # the next piece opens the answer: short
                if self.guard.stopped:
                    break  # another speaker's line: the answer is over
                if self.speech.full:
                    break  # the spoken budget is used up: the rest is never said
                if dropped >= _NOTHING_CLEAN_CHARS and self._unspeakable_so_far():
                    self.nothing_clean = True
                    break  # nothing clean yet: asking again is sooner than the rest
            for tool_delta in delta.tool_calls or ():
                merge_tool_delta(self._slots, tool_delta)

    def _unspeakable_so_far(self) -> bool:
        """The turn has said nothing, and no tool call (a real one, or one written as text
        that the guard holds) is on its way."""
        return self.speech.opening and not self._slots and not self.guard.held

    def end_stream(self, depth: int) -> Iterator[EngineEvent]:
        """What the guard and the splitter still held, and the round's complete tool calls
        (``depth`` names calls the server sent without an id)."""
        if self.nothing_clean:  # cut mid-sample: what is held is a fragment, never said
            self._count_labels()
            self.speech.forget_held()
            return
        last = self.guard.flush()
        self._count_labels()
        self.content.append(last)
        pieces = self._splitter.push(last)
        rest = self._splitter.flush()
        if rest and self.cut_off and (pieces or self.speech.spoken) and not _ends_sentence(rest):
            self.speech.budget.ran_out()  # cut at the token cap mid-sentence: not said
        elif rest:
            if self.cut_off and not _ends_sentence(rest):
                self.speech.budget.ran_out()
                rest = _closed(rest)  # the only words of the answer, ended where a clause ends
            pieces.append(rest)
        yield from self.speech.say(pieces, final=True)
        self.calls = [
            ToolCall(slot["id"] or f"call_{depth}_{index}", slot["name"], slot["arguments"] or "{}")
            for index, slot in sorted(self._slots.items())
            if slot["name"]
        ]


def _ends_sentence(piece: str) -> bool:
    return piece.rstrip("\"')]}»”’ ").endswith((".", "!", "?", "…"))


def _closed(piece: str) -> str:
    """An unfinished sentence ended at its last clause mark (past half of it), with a stop."""
    marks = [piece.rfind(mark) for mark in (",", ";", ":", " - ", " — ")]
    cut = max(marks)
    head = piece[:cut] if cut >= len(piece) // 2 else piece
    return head.rstrip(" ,;:—–-") + "."
