"""Realtime engine: OpenAI Realtime (GA protocol) speech-to-speech with the tool host bridged in.

One websocket session per NPC (its voice and persona), 24 kHz mono s16le in and out. The host's
tools visible at the turn's tier are declared as functions with ``session.update`` and
re-declared when the tier changes. Function calls run through the host and go back as
``function_call_output`` items followed by ``response.create``. A barge-in sends
``response.cancel`` and ``conversation.item.truncate`` with the audio actually played, so the
model's memory matches what the players heard. A turn whose tier exposes tools slower than
``max_realtime_tier`` is answered entirely by the fallback (cascaded) engine instead of
switching engines mid-utterance (docs/tools.md). The protocol's payloads are built in
``realtime_wire``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import openai
from websockets.exceptions import ConnectionClosed

from campaigns.basics import AudioChunk, GlyphoxaError, Tier
from npcs.context import build_system_prompt, direction_note, render_scene
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
from npcs.engines.realtime_wire import BYTES_PER_MS, REALTIME_SAMPLE_RATE
from npcs.inference.openai_client import openai_client
from npcs.sentences import SentenceSplitter
from npcs.usage import UsageSink, realtime_usage
from tools.host.types import ToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic import SecretStr

    from tools.host import ToolHost

__all__ = ["DEFAULT_REALTIME_MODEL", "REALTIME_SAMPLE_RATE", "RealtimeEngine", "RealtimeSettings"]

log = logging.getLogger(__name__)

DEFAULT_REALTIME_MODEL = "gpt-realtime"


class _RealtimeOptions(Protocol):
    @property
    def voice(self) -> str: ...

    @property
    def max_realtime_tier(self) -> Tier: ...


class RealtimeSettings(Protocol):
    """What the engine reads of ``providers.realtime`` (``bot.config_providers``)."""

    @property
    def model(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def api_key(self) -> SecretStr | None: ...

    @property
    def options(self) -> _RealtimeOptions: ...


@dataclass
class _Session:
    """One NPC's live Realtime connection and what has been declared on it."""

    connection: Any
    manager: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    declared: tuple[Tier, tuple[str, ...]] | None = None
    instructions: str = ""
    scene_sent_at: float = float("-inf")
    active_response: str | None = None
    audio_item: tuple[str, int] | None = None
    audio_ms: float = 0.0
    first_audio_at: float | None = None


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
    ) -> None:
        self.client = client
        self.model = model
        self.host = host
        self.fallback = fallback
        self.max_realtime_tier = max_realtime_tier
        self.voice = voice
        self.max_depth = max_depth
        self.meter: UsageSink | None = None  # the table's spend meter: responses report usage
        self._sessions: dict[str, _Session] = {}
        self._connecting: dict[str, asyncio.Lock] = {}

    @classmethod
    def from_config(
        cls,
        provider: RealtimeSettings,
        *,
        host: ToolHost | None = None,
        fallback: Engine | None = None,
    ) -> RealtimeEngine:
        """From the ``providers.realtime`` section (``model``, ``base_url``, ``api_key``;
        ``options.voice``, ``options.max_realtime_tier``)."""
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
        )

    async def aclose(self) -> None:
        """Close every NPC's connection."""
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            with contextlib.suppress(Exception):
                await session.manager.__aexit__(None, None, None)

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
        session = await self._session(request)
        async with session.lock:
            try:
                async for event in self._turn(session, request):
                    yield event
            except (asyncio.CancelledError, GeneratorExit):
                await asyncio.shield(self._interrupt(session, request))
                raise
            except (ConnectionClosed, openai.OpenAIError, OSError) as error:
                await self._drop(request.npc.name)
                raise GlyphoxaError(
                    f"realtime connection for {request.npc.name} lost: {error}"
                ) from None

    async def _drop(self, npc: str) -> None:
        """Forget a broken connection; the next turn reconnects."""
        session = self._sessions.pop(npc, None)
        if session is not None:
            with contextlib.suppress(Exception):
                await session.manager.__aexit__(None, None, None)

    async def interrupt(self, npc: str, played_ms: float | None = None) -> None:
        """Barge-in after a turn already finished streaming (its audio still playing):
        truncate what the NPC has not said yet out of the server's memory."""
        session = self._sessions.get(npc)
        if session is not None:
            await self._interrupt(session, None, played_ms)

    # -- connection -------------------------------------------------------------------------

    async def _session(self, request: TurnRequest) -> _Session:
        """The NPC's connection, opened and set up on first use. One connect per NPC at a time
        (two turns never open two connections, one of them never closed); a connection that
        fails while being set up is closed, not left open, and the turn fails clearly."""
        npc = request.npc
        async with self._connecting.setdefault(npc.name, asyncio.Lock()):
            session = self._sessions.get(npc.name)
            if session is not None:
                return session
            manager = self.client.realtime.connect(model=self.model)
            try:
                connection = await manager.__aenter__()
            except Exception as error:
                raise GlyphoxaError(
                    f"cannot reach the realtime API for {npc.name}: {error}"
                ) from None
            voice = (
                npc.voice.voice
                if npc.voice.provider == "openai" and npc.voice.voice
                else self.voice
            )
            instructions = build_system_prompt(npc, has_tools=bool(npc.tools))
            try:
                await connection.session.update(session=wire.session_setup(instructions, voice))
            except BaseException as error:
                with contextlib.suppress(Exception):
                    await manager.__aexit__(None, None, None)
                if isinstance(error, ConnectionClosed | openai.OpenAIError | OSError):
                    raise GlyphoxaError(
                        f"realtime connection for {npc.name} lost while setting it up: {error}"
                    ) from None
                raise
            session = _Session(connection=connection, manager=manager, instructions=instructions)
            self._sessions[npc.name] = session
            return session

    async def _declare_tools(self, session: _Session, request: TurnRequest) -> None:
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
        session.declared = (request.tier, names)

    async def _send_input(self, session: _Session, request: TurnRequest) -> None:
        connection = session.connection
        fresh = [
            line
            for line in request.scene
            if line.at > session.scene_sent_at
            and not (line.npc is None and line.text.strip() == request.text.strip())
        ]
        context = []
        if fresh:
            context.append("Meanwhile at the table:\n" + render_scene(fresh, request.npc.name))
            session.scene_sent_at = max(line.at for line in fresh)
        if request.entity_snapshot:
            context.append(f"Facts from the campaign notes:\n{request.entity_snapshot.strip()}")
        if request.direction:
            context.append(direction_note(request.direction))
        if context:
            await connection.conversation.item.create(
                item=wire.message("system", "\n\n".join(context))
            )
        if request.audio:
            for piece in wire.audio_appends(request.audio):
                await connection.input_audio_buffer.append(audio=piece)
            await connection.input_audio_buffer.commit()
        else:
            text = f"{request.speaker} says to you: {request.text.strip()}"
            await connection.conversation.item.create(item=wire.message("user", text))

    # -- one turn ---------------------------------------------------------------------------

    async def _turn(
        self, session: _Session, request: TurnRequest
    ) -> AsyncGenerator[EngineEvent, None]:
        connection = session.connection
        await self._declare_tools(session, request)
        await self._send_input(session, request)
        session.audio_item = None
        session.audio_ms = 0.0
        session.first_audio_at = None
        await connection.response.create()
        transcript: list[str] = []
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
                message = getattr(getattr(event, "error", None), "message", "") or str(event)
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
                yield TurnDone("".join(transcript).strip(), engine=self.name)
                return

    @staticmethod
    def _filler_line(npc: Any) -> str:
        lines = list(npc.filler_lines) or list(DEFAULT_FILLERS)
        first: str = lines[0]
        return first

    async def _run_tools(
        self, session: _Session, request: TurnRequest, calls: list[ToolCall]
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
        self, session: _Session, request: TurnRequest | None, played_ms: float | None = None
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
                item_id, content_index = session.audio_item
                await connection.conversation.item.truncate(
                    item_id=item_id, content_index=content_index, audio_end_ms=heard
                )
                session.audio_item = None
        except Exception as error:  # the connection may already be gone
            log.warning("realtime barge-in failed: %s", error)
