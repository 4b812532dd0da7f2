"""One round of the cascaded engine's tool loop, spoken while it arrives.

A round is one chat completion: its text passes the :class:`~npcs.engines.guard.ContentGuard`
(never another speaker's line, never a tool call written as text), is cut into sentences and
handed out as :class:`~npcs.engines.events.Sentence` events at once, so TTS speaks the first
sentence while the model still writes the rest; the round's tool calls are collected for the
loop. What happens between rounds (asking again, a filler, running the tools, the follow-up
prompt) is :mod:`npcs.engines.cascaded`'s; this module only reads what one round said.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from npcs.engines.chat_wire import completion_parts, merge_tool_delta
from npcs.engines.events import EngineEvent, FirstToken, Sentence
from npcs.engines.guard import ContentGuard, fresh_sentences
from npcs.sentences import SentenceSplitter, split_sentences
from tools.host.types import ToolCall

__all__ = ["RoundReader", "TurnSpeech"]

log = logging.getLogger(__name__)

#: Words before a comma that may end the first spoken piece of a turn; without a comma, words
#: before the next phrase (a conjunction or preposition): the voice starts sooner.
_FIRST_CLAUSE_WORDS = 4


@dataclass(slots=True)
class TurnSpeech:
    """What one turn has said so far, over all its rounds.

    Attributes:
        heard: the player's words; a sentence that only repeats them is never spoken.
        prefix: words already spoken before this engine took over (the sentence cascade's
            opener), or None.
        spoken: the sentences handed out, in order.
    """

    heard: str
    prefix: str | None = None
    spoken: list[str] = field(default_factory=list)
    _first: bool = field(init=False)

    def __post_init__(self) -> None:
        self._first = self.prefix is None  # a continued turn has had its first token

    def first_token(self) -> bool:
        """True once, when the turn's first token (text or tool call) arrives."""
        first, self._first = self._first, False
        return first

    @property
    def opening(self) -> bool:
        """Nothing of the turn was spoken yet: the next piece opens it."""
        return not self.spoken and self.prefix is None

    def say(self, pieces: Iterable[str]) -> Iterator[Sentence]:
        """The pieces not yet said (nor parroting the player), each remembered as spoken."""
        for sentence in fresh_sentences(pieces, self.heard, self.spoken):
            self.spoken.append(sentence)
            yield Sentence(sentence)

    def said(self) -> str:
        """The whole turn as spoken, the prefix included."""
        return " ".join(([self.prefix] if self.prefix else []) + self.spoken).strip()


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
        self._slots: dict[int, dict[str, str]] = {}
        self._splitter = SentenceSplitter()

    def complete(self, response: Any) -> Iterator[EngineEvent]:
        """An unstreamed round: the whole answer at once."""
        text, self.calls = completion_parts(response)
        self.raw.append(text)
        if (text or self.calls) and self.speech.first_token():
            yield FirstToken()
        text = (self.guard.push(text) + self.guard.flush()).strip() if text else ""
        if text:
            self.content.append(text)
            yield from self.speech.say(split_sentences(text))

    async def stream(self, chunks: Any) -> AsyncGenerator[EngineEvent, None]:
        """A streamed round: each sentence leaves as soon as it is complete; stops reading at
        another speaker's line. The caller closes the stream (whatever ended the reading)."""
        # The turn's very first piece may end at a comma: TTS starts sooner.
        clause = _FIRST_CLAUSE_WORDS if self.speech.opening else None
        self._splitter = SentenceSplitter(first_clause_words=clause, first_phrase_words=clause)
        async for chunk in chunks:
            self.usage = getattr(chunk, "usage", None) or self.usage
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if (delta.content or delta.tool_calls) and self.speech.first_token():
                yield FirstToken()
            if delta.content:
                self.raw.append(delta.content)
                safe = self.guard.push(delta.content)
                self.content.append(safe)
                for sentence in self.speech.say(self._splitter.push(safe)):
                    yield sentence
                if self.guard.stopped:
                    break  # another speaker's line: the answer is over
            for tool_delta in delta.tool_calls or ():
                merge_tool_delta(self._slots, tool_delta)

    def end_stream(self, depth: int) -> Iterator[EngineEvent]:
        """What the guard and the splitter still held, and the round's complete tool calls
        (``depth`` names calls the server sent without an id)."""
        last = self.guard.flush()
        self.content.append(last)
        pieces = self._splitter.push(last)
        rest = self._splitter.flush()
        if rest:
            pieces.append(rest)
        yield from self.speech.say(pieces)
        self.calls = [
            ToolCall(slot["id"] or f"call_{depth}_{index}", slot["name"], slot["arguments"] or "{}")
            for index, slot in sorted(self._slots.items())
            if slot["name"]
        ]
