"""Cascaded engine: streaming chat completions with a tool loop, spoken sentence by sentence.

Works against any OpenAI-compatible ``base_url`` (OpenAI, Groq, the local llama.cpp server).
Each round streams the model's text (complete sentences go to TTS at once) and collects tool
calls; the calls of one round run in parallel through the tool host, their results go back to
the model, and the loop repeats up to ``max_depth`` rounds, after which the model must answer
without tools. When the requested tools are expected to take longer than ``filler_after_ms``,
a filler line in the NPC's voice covers the wait. Reading one round's answer (sentences out as
they complete, cleaned and within the spoken budget, tool calls collected) is
:mod:`npcs.engines.cascaded_round`'s. Before the first round the table's own actions run
(:mod:`npcs.engines.table_actions`: a roll asked for, what the NPC recalls); an answer with
nothing clean in it is asked for again once, then the NPC says its fallback line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncGenerator, Iterable
from typing import TYPE_CHECKING, Any

import openai

from campaigns.basics import GlyphoxaError, Tier
from campaigns.providers.usage import UsageSink, record_round
from npcs.context import CONTINUE_INSTRUCTION, MAX_SCENE_CHARS, build_messages
from npcs.engines.cascaded_round import RoundReader, turn_speech
from npcs.engines.chat_wire import (
    assistant_tool_message,
    create_chat,
    expected_cost_ms,
    offered_tools,
    request_messages,
    run_tool_calls,
    shorten,
    speaker_names,
    stream_error,
    tool_message,
)
from npcs.engines.events import (
    EngineEvent,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)
from npcs.engines.fillers import DEFAULT_FALLBACKS, DEFAULT_FILLERS, FillerPicker
from npcs.engines.guard import ContentGuard, calls_written_as_text, speaker_stops
from npcs.engines.prompt_warming import PromptWarming
from npcs.engines.table_actions import TableActions, plan_table_actions, run_table_actions
from npcs.inference.health import LlmHealth, LlmUnavailable
from npcs.spoken_budget import token_cap
from tools.host.types import ToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from tools.host import ToolHost

__all__ = [
    "DEFAULT_FILLERS",
    "CascadedEngine",
    "expected_cost_ms",
    "offered_tools",
    "request_messages",
    "speaker_names",
    "stream_error",
]

log = logging.getLogger(__name__)

_ASK_AGAIN = 1
"""Samples after an answer with nothing clean to speak: one, then the NPC's fallback line (a
second wait for the model costs the table more than an in-character line does)."""


class CascadedEngine(PromptWarming):
    """LLM tool loop -> sentences. One instance serves every NPC using this engine.

    Args:
        client: an ``openai.AsyncOpenAI`` pointed at any compatible ``base_url``.
        model: default model; an NPC's ``llm.model`` overrides it.
        host: the tool host; None means no tools at all.
        max_depth: tool rounds before the model must answer without tools.
        filler_after_ms: speak a filler first when a round's tools are expected to take longer.
        stream_tool_rounds: False for servers that cannot stream while tools are offered
            (llama-cpp-python's ``chatml-function-calling``): rounds with tools then run
            unstreamed. The bundled server streams every round.
        stop_at_speakers: send stop sequences that end an answer where the model starts
            another speaker's line (``"\nArin:"``); ``max_stops`` caps them (OpenAI: 4,
            None: no cap, as llama.cpp). Small models need it; some cloud models reject
            ``stop``. Whatever slips through is cut by :class:`ContentGuard` anyway.
        scene_chars: how much of the scene transcript a prompt carries.
        follow_up_scene: False drops the scene from the rounds after a tool round (a server
            whose template puts the tools between system prompt and scene would otherwise
            evaluate the whole scene again).
        retry_in_character: a round asked again (the model wrote another speaker's line or
            echoed the player) starts the answer as the NPC's own quoted line (``Bartok: "``,
            a final assistant message) and ends at its closing quote. Only for servers that
            continue a final assistant message (the bundled one, llama.cpp's llama-server).
        open_in_character: a FAST answer's first round starts that way too, so the first
            sample is already the NPC speaking: no label, echo or scaffolding to cut and wait
            for a second sample over (the latency tail), at the cost of no tool call in it
            (the table runs the rolls and recall a FAST turn needs; ``table_actions``).
        health: the LLM server's supervisor: requests fail at once while it is down, and a
            broken request names the crash rather than "Connection error".
        sampling: more request settings sent with every round (``frequency_penalty``;
            ``extra_body`` for a server's own, such as llama.cpp's ``repeat_penalty``).
    """

    name = "cascaded"

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        host: ToolHost | None = None,
        max_depth: int = 4,
        filler_after_ms: float = 700.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sampling: dict[str, Any] | None = None,
        stream_tool_rounds: bool = True,
        stop_at_speakers: bool = False,
        max_stops: int | None = 4,
        scene_chars: int = MAX_SCENE_CHARS,
        follow_up_scene: bool = True,
        retry_in_character: bool = False,
        open_in_character: bool = False,
        rng: random.Random | None = None,
        health: LlmHealth | None = None,
    ) -> None:
        if max_depth < 0:
            raise ValueError("max_depth must be >= 0")
        self.client = client
        self.model = model
        self.host = host
        self.max_depth = max_depth
        self.filler_after_ms = filler_after_ms
        self.temperature = temperature
        self.sampling = dict(sampling or {})
        self.max_tokens = max_tokens
        self.stream_tool_rounds = stream_tool_rounds
        self.stop_at_speakers = stop_at_speakers
        self.max_stops = max_stops
        self.scene_chars = scene_chars
        self.follow_up_scene = follow_up_scene
        self.retry_in_character = retry_in_character
        self.open_in_character = open_in_character
        self.health = health
        self.fillers = FillerPicker(rng)
        self.fallbacks = FillerPicker(rng)
        self.meter: UsageSink | None = None  # the table's spend meter: requests report usage
        self._turns = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def _in_character(self, tier: Tier, asked_again: int, depth: int, prefix: str | None) -> bool:
        """Whether a round starts as the NPC's quoted line: asked again, or a FAST first one."""
        if asked_again:
            return self.retry_in_character
        return self.open_in_character and tier is Tier.FAST and depth == 0 and not prefix

    def respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one turn. Consume it inside ``contextlib.aclosing`` and cancel to barge in."""
        return self.run_turn(request)

    async def run_turn(
        self,
        request: TurnRequest,
        *,
        prefix: str | None = None,
        allow_filler: bool = True,
        model: str | None = None,
        actions: TableActions | None = None,
    ) -> AsyncGenerator[EngineEvent, None]:
        """The tool loop. ``prefix``: words already spoken (sentence cascade) to continue from;
        ``actions``: the table actions already run for this turn (else they run here)."""
        self._turns += 1
        self._idle.clear()
        try:
            loop = self._tool_loop(request, prefix, allow_filler, model, actions)
            async with contextlib.aclosing(loop) as events:
                async for event in events:
                    yield event
        finally:
            self._turns -= 1
            if not self._turns:
                self._idle.set()

    async def _tool_loop(
        self,
        request: TurnRequest,
        prefix: str | None,
        allow_filler: bool,
        model: str | None,
        actions: TableActions | None,
    ) -> AsyncGenerator[EngineEvent, None]:
        npc = request.npc
        whitelist = tuple(npc.tools)
        filler_spoken = not allow_filler
        if actions is None:
            plan = plan_table_actions(self.host, request)
            if plan.calls and not filler_spoken and self._waits_for_dm(npc.name, plan.calls):
                filler_spoken = True  # the DM is asked first: the NPC does not go silent
                yield Filler(self.fillers.pick(npc.name, npc.filler_lines))
            actions = await run_table_actions(self.host, request, plan)
            if actions.report is not None:
                yield ToolsUsed(actions.report)
        tools = [
            tool
            for tool in offered_tools(self.host, whitelist, request.tier)
            if tool["function"]["name"] not in actions.withheld
        ]
        messages = request_messages(
            request, has_tools=bool(tools), scene_chars=self.scene_chars, notes=actions.note
        )
        names = speaker_names(request)
        stops = speaker_stops(names, limit=self.max_stops) if self.stop_at_speakers else []
        speech = turn_speech(request, names, actions, prefix)
        if actions.opening and not prefix:
            if speech.first_token():
                yield FirstToken()
            for sentence in speech.say_ours(actions.opening):
                yield sentence
        if prefix:
            messages.append({"role": "assistant", "content": prefix})
            messages.append({"role": "system", "content": CONTINUE_INSTRUCTION})
        asked_again = depth = 0
        while depth <= self.max_depth and not speech.full:
            offered = tools if depth < self.max_depth else []
            params = self._params(npc, messages, offered, model)
            params["max_tokens"] = min(
                params.get("max_tokens") or token_cap(speech.budget.words),
                token_cap(speech.budget.words),
            )
            if stops:
                params["stop"] = stops
            if self._in_character(request.tier, asked_again, depth, prefix):
                # Measured on 33 real prompts: 0 unspeakable answers started this way, 3 free.
                params["messages"].append({"role": "assistant", "content": f'{npc.name}: "'})
                params["stop"] = [*stops, '"']
            reader = RoundReader(ContentGuard(names, own=[npc.name, *npc.aliases]), speech)
            if offered and not self.stream_tool_rounds:
                response = await self.create(stream=False, **params)
                record_round(self.meter, getattr(response, "usage", None), params, npc.name)
                for event in reader.complete(response):
                    yield event
            else:
                usage = {"stream_options": {"include_usage": True}} if self.meter else {}
                stream = await self.create(stream=True, **params, **usage)
                try:
                    async with contextlib.aclosing(reader.stream(stream)) as events:
                        async for event in events:
                            yield event
                except openai.APIError as error:
                    raise await self._explained(stream_error(self.client, error)) from None
                finally:
                    await stream.close()
                    # cut off (barge-in, another speaker's line): no usage came, estimate it
                    record_round(self.meter, reader.usage, params, npc.name, "".join(reader.raw))
                for event in reader.end_stream(depth):
                    yield event
            calls = reader.calls
            if reader.guard.held:
                calls += calls_written_as_text(npc.name, reader.guard.held, offered, depth)
            if not calls and not speech.spoken and not prefix and asked_again < _ASK_AGAIN:
                # another speaker's line, an echo, scaffolding: sample this round again
                asked_again += 1
                speech.cleaner.count("regenerated")  # type: ignore[union-attr]
                log.info(
                    "%s: nothing clean to speak in the answer, asking again: %r",
                    npc.name,
                    shorten("".join(reader.raw), 200),
                )
                continue
            if not calls or not offered or speech.full:
                if calls:
                    log.warning("%s: tool calls after the last round ignored", npc.name)
                break
            if not filler_spoken:
                cost = expected_cost_ms(self.host, calls, whitelist)
                # A call that waits for the DM's approval takes as long as the DM does.
                if cost > self.filler_after_ms or self._waits_for_dm(npc.name, calls):
                    filler_spoken = True
                    yield Filler(self.fillers.pick(npc.name, npc.filler_lines))
            report = await run_tool_calls(self.host, calls, request)
            yield ToolsUsed(report)
            if not self.follow_up_scene and request.scene and messages[1]["role"] == "user":
                messages[1] = build_messages(
                    npc,
                    request.speaker,
                    request.text,
                    entity_snapshot=request.entity_snapshot,
                    direction=request.direction,
                    reacting_to=request.reacting_to,
                    notes=actions.note,
                )[1]
            messages.append(assistant_tool_message("".join(reader.content), calls))
            messages.extend(tool_message(result) for result in report.results)
            speech.ground(report.results)
            depth += 1
        cleaner = speech.cleaner
        assert cleaner is not None
        if not speech.spoken and not prefix:
            line = self.fallbacks.pick(npc.name, npc.fallback_lines or DEFAULT_FALLBACKS)
            cleaner.count("fallback")
            log.info("%s: no clean answer even asked again; fallback line %r", npc.name, line)
            speech.spoken.append(line)
            yield Sentence(line)
        yield TurnDone(
            speech.said(),
            engine=self.name,
            budget_words=speech.budget.words,
            budget_hit=speech.budget.hit,
            repairs=cleaner.summary(),
        )

    def _waits_for_dm(self, npc: str, calls: Iterable[ToolCall]) -> bool:
        return self.host is not None and self.host.needs_approval(npc, (c.name for c in calls))

    # -- helpers ----------------------------------------------------------------------------

    def _params(
        self,
        npc: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": model or npc.llm.model or self.model,
            "messages": list(messages),
        }
        temperature = npc.llm.temperature if npc.llm.temperature is not None else self.temperature
        if temperature is not None:
            params["temperature"] = temperature
        params.update(self.sampling)
        max_tokens = npc.llm.max_tokens or self.max_tokens
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if tools:
            params["tools"] = tools
            params["tool_choice"] = "auto"
        return params

    async def create(self, *, client: Any = None, **params: Any) -> Any:
        """One chat request to this engine's server (or ``client``, another one: the sentence
        cascade's fast model); a failure is one line naming the URL, the config key and the
        fix (``chat_wire.create_chat``), or the bundled server's own reason when it died."""
        ours = client is None or client is self.client
        if ours and self.health is not None and (reason := self.health.unavailable()):
            raise LlmUnavailable(reason)
        try:
            return await create_chat(self.client if client is None else client, **params)
        except GlyphoxaError as error:
            raise (await self._explained(error) if ours else error) from None

    async def _explained(self, error: GlyphoxaError) -> GlyphoxaError:
        """A failed request as the server's own reason when it has just died."""
        if self.health is not None and (reason := await self.health.explain()):
            return LlmUnavailable(reason)
        return error
