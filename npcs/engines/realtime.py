"""Realtime engine: OpenAI Realtime (GA protocol) speech-to-speech with the tool host bridged in.

One websocket session per NPC (its voice and persona), 24 kHz mono s16le in and out. The host's
tools visible at the turn's tier are declared as functions with ``session.update`` and
re-declared when the tier changes. Function calls run through the host and go back as
``function_call_output`` items followed by ``response.create``. A barge-in sends
``response.cancel`` and ``conversation.item.truncate`` with the audio actually played, so the
model's memory matches what the players heard. A turn whose tier exposes tools slower than
``max_realtime_tier`` is answered entirely by the fallback (cascaded) engine instead of
switching engines mid-utterance (docs/tools.md).

Providers end a session after a fixed time (OpenAI: 30 minutes). Each session is renewed before
that, between turns (a turn in progress finishes first, a turn arriving meanwhile waits), and
the new session is told a summary of the conversation and the recent turns (``realtime_carry``)
and offered the same persona and tools. A session the server ends early is renewed at once the
same way; a turn it ended before answering is asked again on the new session, once. The
protocol's payloads are built in ``realtime_wire``, sessions in ``realtime_session``, and
their renewal is kept by ``realtime_keeper``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Protocol

import openai
from websockets.exceptions import ConnectionClosed

from campaigns.basics import AudioChunk, GlyphoxaError, Tier
from campaigns.providers.openai_client import openai_client
from campaigns.providers.usage import UsageSink, realtime_usage
from npcs.context import build_system_prompt
from npcs.engines import realtime_wire as wire
from npcs.engines.cascaded import DEFAULT_FILLERS, offered_tools
from npcs.engines.chat_wire import await_confirmation
from npcs.engines.events import (
    Caption,
    Engine,
    EngineEvent,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)
from npcs.engines.realtime_carry import RenewalPolicy
from npcs.engines.realtime_keeper import SessionKeeper
from npcs.engines.realtime_session import RealtimeSession
from npcs.engines.realtime_wire import BYTES_PER_MS, REALTIME_SAMPLE_RATE
from npcs.engines.table_actions import run_table_actions
from npcs.sentences import SentenceSplitter
from tools.host.types import ToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic import SecretStr

    from tools.host import ToolHost

__all__ = [
    "DEFAULT_REALTIME_MODEL",
    "REALTIME_SAMPLE_RATE",
    "RealtimeEngine",
    "RealtimeSettings",
    "RenewalPolicy",
]

log = logging.getLogger(__name__)

DEFAULT_REALTIME_MODEL = "gpt-realtime"


class _RealtimeOptions(Protocol):
    @property
    def voice(self) -> str: ...

    @property
    def max_realtime_tier(self) -> Tier: ...

    @property
    def session_limit_s(self) -> float: ...

    @property
    def renew_margin_s(self) -> float: ...

    @property
    def carry_turns(self) -> int: ...


class RealtimeSettings(Protocol):
    """What the engine reads of ``providers.realtime`` (``bot.settings.providers``)."""

    @property
    def model(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def api_key(self) -> SecretStr | None: ...

    @property
    def options(self) -> _RealtimeOptions: ...


class _Ended(Exception):
    """The server ended the session (its time limit) in the middle of a turn."""


class RealtimeEngine:
    """Speech-to-speech NPC turns over the Realtime API.

    Args:
        client: an ``openai.AsyncOpenAI``; its ``base_url`` (or ``websocket_base_url``) picks
            the server (``wss://api.openai.com/v1/realtime`` by default).
        model: the realtime model, e.g. ``gpt-realtime``.
        host: the tool host; None means no tools.
        fallback: the engine for turns that need slow tools (normally a ``CascadedEngine``).
        max_realtime_tier: the slowest tool tier realtime handles itself.
        voice: default voice when an NPC has no ``openai`` voice configured.
        max_depth: tool rounds per turn before the model must answer.
        renewal: when sessions are renewed and what they carry over (OpenAI's limits by
            default).
    """

    name = "realtime"

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        host: ToolHost | None = None,
        fallback: Engine | None = None,
        max_realtime_tier: Tier = Tier.STANDARD,
        voice: str = "alloy",
        max_depth: int = 4,
        renewal: RenewalPolicy | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.host = host
        self.fallback = fallback
        self.max_realtime_tier = max_realtime_tier
        self.voice = voice
        self.max_depth = max_depth
        self.sessions = SessionKeeper(client, model, renewal or RenewalPolicy())
        """Each NPC's session and conversation, renewed before the provider's limit."""

    @property
    def meter(self) -> UsageSink | None:
        """The table's spend meter: every response reports its usage, a renewal's summary too."""
        return self.sessions.meter

    @meter.setter
    def meter(self, sink: UsageSink | None) -> None:
        self.sessions.meter = sink

    @classmethod
    def from_config(
        cls,
        provider: RealtimeSettings,
        *,
        host: ToolHost | None = None,
        fallback: Engine | None = None,
    ) -> RealtimeEngine:
        """From the ``providers.realtime`` section (``model``, ``base_url``, ``api_key``;
        ``options.voice``, ``max_realtime_tier``, ``session_limit_s``, ``renew_margin_s``,
        ``carry_turns``)."""
        key = provider.api_key
        base_url = provider.base_url
        if key is None and base_url is None:
            raise GlyphoxaError("providers.realtime needs an api_key (write ${OPENAI_API_KEY})")
        client = openai_client(key, base_url)
        options = provider.options
        return cls(
            client,
            model=provider.model or DEFAULT_REALTIME_MODEL,
            host=host,
            fallback=fallback,
            max_realtime_tier=options.max_realtime_tier,
            voice=options.voice,
            renewal=RenewalPolicy(
                limit_s=options.session_limit_s,
                margin_s=options.renew_margin_s,
                carry_turns=options.carry_turns,
            ),
        )

    async def aclose(self) -> None:
        """Stop renewing and close every NPC's connection."""
        await self.sessions.aclose()

    def needs_cascade(self, request: TurnRequest) -> bool:
        """True when the turn's visible tools include one slower than realtime should wait."""
        if self.fallback is None or self.host is None or not request.npc.tools:
            return False
        visible = self.host.visible_tools(tuple(request.npc.tools), request.tier)
        return any(info.tier > self.max_realtime_tier for info in visible)

    def respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]:
        return self._respond(request)

    async def _respond(self, request: TurnRequest) -> AsyncGenerator[EngineEvent, None]:
        if self.needs_cascade(request):
            assert self.fallback is not None
            log.debug(
                "%s: %s tier needs slow tools, using the fallback", request.npc.name, request.tier
            )
            async with contextlib.aclosing(self.fallback.respond(request)) as events:
                async for event in events:
                    yield event
            return
        actions = await run_table_actions(self.host, request)  # a roll, a lookup: told below
        if actions.report is not None:
            yield ToolsUsed(actions.report)
            request = dataclasses.replace(request, notes=actions.unsaid_note or actions.note)
        npc = request.npc.name
        sessions = self.sessions
        async with sessions.lock(npc):  # one turn (or renewal) of an NPC at a time, in order
            asked_again = False
            while True:
                session = await sessions.session(npc, *self._persona(request))
                answered = False
                try:
                    async for event in self._turn(session, request):
                        answered = True
                        yield event
                    return
                except (asyncio.CancelledError, GeneratorExit):
                    await asyncio.shield(self._interrupt(session, request))
                    sessions.record(npc, session, cut=True)
                    raise
                except (_Ended, ConnectionClosed, openai.OpenAIError, OSError) as error:
                    await sessions.retire(npc, session)
                    if answered or asked_again:
                        sessions.record(npc, session, cut=True)
                        sessions.renew_now(npc, session)
                        raise GlyphoxaError(
                            f"realtime connection for {npc} lost: {error}"
                        ) from None
                    log.warning(
                        "realtime session for %s ended by the server before it answered (%s): "
                        "renewing it and asking again",
                        npc,
                        error,
                    )
                    asked_again = True

    async def interrupt(self, npc: str, played_ms: float | None = None) -> None:
        """Barge-in after a turn already finished streaming (its audio still playing):
        truncate what the NPC has not said yet out of the server's memory."""
        session = self.sessions.current(npc)
        if session is not None:
            await self._interrupt(session, None, played_ms)

    def _persona(self, request: TurnRequest) -> tuple[str, str]:
        """The NPC's instructions and realtime voice."""
        npc = request.npc
        voice = (
            npc.voice.voice if npc.voice.provider == "openai" and npc.voice.voice else self.voice
        )
        return build_system_prompt(npc, has_tools=bool(npc.tools)), voice

    async def _declare_tools(self, session: RealtimeSession, request: TurnRequest) -> None:
        """Re-declare tools when the tier (or the visible set) changed, and the persona when
        the NPC file was hot-reloaded."""
        npc = request.npc
        instructions = build_system_prompt(npc, has_tools=bool(npc.tools))
        if instructions != session.instructions:
            await session.connection.session.update(
                session={"type": "realtime", "instructions": instructions}
            )
            session.instructions = instructions
        tools = offered_tools(self.host, tuple(npc.tools), request.tier)
        names = tuple(t["function"]["name"] for t in tools)
        if session.declared == (request.tier, names):
            return
        await session.connection.session.update(session=wire.function_tools(tools))
        session.declared, session.tools = (request.tier, names), tools

    # -- one turn ---------------------------------------------------------------------------

    async def _turn(
        self, session: RealtimeSession, request: TurnRequest
    ) -> AsyncGenerator[EngineEvent, None]:
        connection = session.connection
        await self._declare_tools(session, request)
        await session.send_input(request, self.sessions.conversation(request.npc.name))
        session.audio_item = None
        session.audio_ms = 0.0
        session.first_audio_at = None
        await connection.response.create()
        transcript = session.transcript
        splitter = SentenceSplitter()
        calls: list[ToolCall] = []
        first = True
        depth = 0
        waiting_for_created = True
        while True:
            event = await connection.recv()
            kind = event.type
            if kind == "response.created":
                session.active_response = event.response.id
                waiting_for_created = False
                continue
            if kind == "error":
                error = getattr(event, "error", None)
                message = getattr(error, "message", "") or str(event)
                if getattr(error, "code", None) == wire.SESSION_EXPIRED:
                    raise _Ended(f"{wire.SESSION_EXPIRED}: {message}")
                if waiting_for_created:
                    raise GlyphoxaError(f"realtime API error for {request.npc.name}: {message}")
                log.warning("realtime error for %s: %s", request.npc.name, message)
                continue
            response_id = getattr(event, "response_id", None)
            if response_id is not None and response_id != session.active_response:
                continue  # late events of an earlier, cancelled response
            if kind == "response.output_audio.delta":
                pcm = base64.b64decode(event.delta)
                if first:
                    first = False
                    yield FirstToken()
                if session.first_audio_at is None:
                    session.first_audio_at = time.monotonic()
                session.audio_item = (event.item_id, event.content_index)
                session.audio_ms += len(pcm) / BYTES_PER_MS
                yield AudioChunk(pcm, REALTIME_SAMPLE_RATE)
            elif kind == "response.output_audio_transcript.delta":
                transcript.append(event.delta)
                yield Caption("".join(transcript).strip())
            elif kind == "response.output_text.delta":
                if first:
                    first = False
                    yield FirstToken()
                transcript.append(event.delta)
                for sentence in splitter.push(event.delta):
                    yield Sentence(sentence)
            elif kind == "response.function_call_arguments.done":
                calls.append(ToolCall(event.call_id, event.name, event.arguments or "{}"))
            elif kind == "response.done":
                session.active_response = None
                used = realtime_usage(
                    getattr(event.response, "usage", None), model=self.model, npc=request.npc.name
                )
                if used is not None and self.meter is not None:
                    self.meter.record(used)
                status = getattr(event.response, "status", "completed")
                if calls and status == "completed" and depth < self.max_depth:
                    depth += 1
                    if self.host is not None and self.host.needs_approval(
                        request.npc.name, (c.name for c in calls)
                    ):  # the DM decides first: say something while they do
                        yield Filler(self._filler_line(request.npc))
                    yield await self._run_tools(session, request, calls)
                    calls = []
                    waiting_for_created = True
                    await connection.response.create()
                    continue
                rest = splitter.flush()
                if rest:
                    yield Sentence(rest)
                answer = "".join(transcript).strip()
                self.sessions.record(request.npc.name, session)
                yield TurnDone(answer, engine=self.name)
                return

    @staticmethod
    def _filler_line(npc: Any) -> str:
        lines = list(npc.filler_lines) or list(DEFAULT_FILLERS)
        first: str = lines[0]
        return first

    async def _run_tools(
        self, session: RealtimeSession, request: TurnRequest, calls: list[ToolCall]
    ) -> ToolsUsed:
        npc = request.npc
        if self.host is None:
            raise GlyphoxaError(f"{npc.name} called tools but no tool host is running")
        await await_confirmation(self.host, calls, request)
        report = await self.host.call_many(
            calls, whitelist=npc.tools, tier=request.tier, npc=npc.name
        )
        for result in report.results:
            await session.connection.conversation.item.create(
                item=wire.function_output(result.call_id, result.model_text())
            )
        return ToolsUsed(report)

    async def _interrupt(
        self, session: RealtimeSession, request: TurnRequest | None, played_ms: float | None = None
    ) -> None:
        """response.cancel for a running response; truncate the audio item to what was heard."""
        connection = session.connection
        try:
            if session.active_response is not None:
                await connection.response.cancel(response_id=session.active_response)
                session.active_response = None
            if session.audio_item is not None:
                if played_ms is None and request is not None and request.played_ms is not None:
                    played_ms = request.played_ms()
                if played_ms is None:
                    started = session.first_audio_at
                    elapsed = 0.0 if started is None else (time.monotonic() - started) * 1000
                    played_ms = elapsed
                heard = int(max(0.0, min(played_ms, session.audio_ms)))
                session.heard_share = heard / session.audio_ms if session.audio_ms else None
                item_id, content_index = session.audio_item
                await connection.conversation.item.truncate(
                    item_id=item_id, content_index=content_index, audio_end_ms=heard
                )
                session.audio_item = None
        except Exception as error:  # the connection may already be gone
            log.warning("realtime barge-in failed: %s", error)
