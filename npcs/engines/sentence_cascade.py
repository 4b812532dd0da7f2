"""Sentence cascade: a fast model speaks a brief opener at once; a strong model continues it.

The opener ("Ah, the Shadowfell... a dark subject.") covers the strong model's first-token time
and any slow tools. The strong model gets the opener as words already spoken (an assistant
message plus an instruction to continue without repeating), and only it sees tools. The table's
own actions run first (``npcs.engines.table_actions``): a roll's number is the opener itself.
The opener passes clean speech like every line (``npcs.clean_speech``).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import openai

from campaigns.providers.usage import record_round
from npcs.clean_speech import LineCleaner, SpeechContext
from npcs.engines.cascaded import CascadedEngine, request_messages, speaker_names, stream_error
from npcs.engines.cascaded_round import asked_before, said_before
from npcs.engines.events import (
    EngineEvent,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)
from npcs.engines.guard import ContentGuard
from npcs.engines.table_actions import run_table_actions
from npcs.sentences import SentenceSplitter

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["SentenceCascadeEngine"]

log = logging.getLogger(__name__)


class SentenceCascadeEngine:
    """Fast opener, strong continuation with tools.

    Args:
        strong: the cascaded engine running the strong model and the tool loop; an NPC's
            ``cascade.strong_model`` overrides its model.
        fast_client: client for the fast model; default: the strong engine's client.
        fast_model: default fast model (an NPC's ``cascade.fast_model`` overrides it);
            default: the strong engine's model.
        opener_max_tokens: cap on the opener's length.
    """

    name = "sentence_cascade"

    def __init__(
        self,
        strong: CascadedEngine,
        *,
        fast_client: AsyncOpenAI | None = None,
        fast_model: str | None = None,
        opener_max_tokens: int = 40,
    ) -> None:
        self.strong = strong
        self.fast_client = fast_client or strong.client
        self.fast_model = fast_model or strong.model
        self.opener_max_tokens = opener_max_tokens

    def respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]:
        return self._respond(request)

    async def prefill(self, request: TurnRequest) -> bool:
        """Prefill the opener's prompt (what the first audio waits for), like
        :meth:`CascadedEngine.prefill`."""
        return await self.strong.prefill(
            request,
            with_tools=False,
            client=self.fast_client,
            model=request.npc.cascade.fast_model or self.fast_model,
        )

    async def _respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]:
        npc = request.npc
        actions = await run_table_actions(self.strong.host, request)
        if actions.report is not None:
            yield ToolsUsed(actions.report)
        cleaner = LineCleaner(
            SpeechContext(
                heard=request.text,
                speakers=[n for n in speaker_names(request) if n not in npc.names()],
                own=npc.names(),
                earlier=said_before(request),
                grounding=[*actions.facts, request.entity_snapshot or ""],
                asked_before=asked_before(request),
                emotes=npc.emotes,
            )
        )
        opener = ""
        if actions.opening:
            opener = actions.opening  # a roll: its number is the opener
            yield FirstToken()
            yield Sentence(opener)
        else:
            async for event in self._opener(request, cleaner):
                if isinstance(event, Sentence):
                    opener = event.text
                yield event
        strong_model = npc.cascade.strong_model
        continuation = self.strong.run_turn(
            request,
            prefix=opener or None,
            allow_filler=not opener,
            model=strong_model,
            actions=actions,
        )
        async with contextlib.aclosing(continuation) as events:
            async for event in events:
                if isinstance(event, FirstToken) and opener:
                    continue
                if isinstance(event, TurnDone):
                    repairs = Counter(dict(cleaner.summary())) + Counter(dict(event.repairs))
                    event = TurnDone(
                        event.text,
                        engine=self.name,
                        budget_words=event.budget_words,
                        budget_hit=event.budget_hit,
                        repairs=tuple(repairs.items()),
                    )
                yield event

    async def _opener(
        self, request: TurnRequest, cleaner: LineCleaner
    ) -> AsyncGenerator[EngineEvent, None]:
        """Stream the fast model only until its first sentence is complete."""
        npc = request.npc
        messages = request_messages(request)
        messages.append({"role": "system", "content": npc.cascade.opener_instruction})
        meter = self.strong.meter
        params: dict[str, Any] = {
            "model": npc.cascade.fast_model or self.fast_model,
            "messages": messages,
            "max_tokens": self.opener_max_tokens,
        }
        usage = {"stream_options": {"include_usage": True}} if meter is not None else {}
        # A failure names the URL, the config key and the fix, as the strong model's does.
        stream: Any = await self.strong.create(
            client=self.fast_client, **params, stream=True, **usage
        )
        splitter = SentenceSplitter(first_clause_words=4)  # the opener may end at a comma
        # Never another speaker's line, never a tool call written as text.
        guard = ContentGuard(speaker_names(request), own=[npc.name, *npc.aliases])
        first = True
        sentence: str | None = None
        written: list[str] = []
        reported = None
        try:
            async for chunk in stream:
                reported = getattr(chunk, "usage", None) or reported
                if not chunk.choices or not chunk.choices[0].delta.content:
                    continue
                written.append(chunk.choices[0].delta.content)
                if first:
                    first = False
                    yield FirstToken()
                done = splitter.push(guard.push(chunk.choices[0].delta.content))
                done = [clean for d in done if (clean := cleaner.clean(d))]
                if done:
                    sentence = done[0]
                    break  # the rest of the fast model's text is not needed
                if guard.stopped or guard.held:
                    break
        except openai.APIError as error:
            raise stream_error(self.fast_client, error) from None
        finally:
            await stream.close()
            record_round(meter, reported, params, npc.name, "".join(written))
        if sentence is None:
            done = splitter.push(guard.flush())
            sentence = done[0] if done else splitter.flush()
            sentence = cleaner.clean(sentence) if sentence else None
        if sentence:
            yield Sentence(sentence)
        else:
            log.debug("%s: the fast model gave no opener", npc.name)
