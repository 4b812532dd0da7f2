"""One realtime NPC session: its provider connection, what was declared on it, and how it ends.

The engine opens a session per NPC and, because providers limit a session's length, replaces it
now and then (``realtime_keeper``). This module opens a session already told the conversation so
far, tells it each turn's input (noting the turn for the next carry-over), asks an old session
for a summary (an out-of-band text response that is not added to the conversation), notices
when the server closes a session between turns, and reads why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import openai
from websockets.exceptions import ConnectionClosed

from campaigns.basics import GlyphoxaError, Tier
from campaigns.providers.usage import realtime_usage
from npcs.context import direction_note, reaction_instruction, render_scene
from npcs.engines import realtime_wire as wire

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from campaigns.providers.usage import UsageSink
    from npcs.engines.events import TurnRequest
    from npcs.engines.realtime_carry import Conversation

__all__ = ["RealtimeSession", "ask_summary", "open_session"]

log = logging.getLogger(__name__)

_LOST = (ConnectionClosed, openai.OpenAIError, OSError)


@dataclass
class RealtimeSession:
    """One NPC's live Realtime connection, what has been declared on it, and the turn it runs.

    ``connection`` is the SDK's ``AsyncRealtimeConnection``; ``manager`` closes it.
    """

    connection: Any
    manager: Any
    voice: str
    instructions: str
    opened_at: float = field(default_factory=time.monotonic)
    declared: tuple[Tier, tuple[str, ...]] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    active_response: str | None = None
    audio_item: tuple[str, int] | None = None
    audio_ms: float = 0.0
    first_audio_at: float | None = None
    said: str | None = None
    """The current turn's player line, until the turn is recorded for carrying over."""
    context: str | None = None
    """What happened at the table that the current turn told the NPC first."""
    scene_upto: float = float("-inf")
    """The newest table line the current turn told the NPC."""
    transcript: list[str] = field(default_factory=list)
    """The current answer's words so far."""
    heard_share: float | None = None
    """The share of the current answer's audio the players heard, when it was cut."""
    retired: bool = False
    """Closed by the engine (replaced or broken), not by the server."""

    @property
    def _socket(self) -> Any:
        # The SDK keeps the websocket on a private attribute; reading it is the only way to
        # learn that the server closed an idle session before the next turn tries to use it.
        return getattr(self.connection, "_connection", None)

    @property
    def closed(self) -> bool:
        """True once the websocket is closed (by either side)."""
        socket = self._socket
        return self.retired or (socket is not None and socket.close_code is not None)

    def age_s(self) -> float:
        """Seconds since the session opened."""
        return time.monotonic() - self.opened_at

    async def wait_closed(self) -> None:
        """Return when the websocket closes; never, if the SDK hides it."""
        socket = self._socket
        if socket is None:
            await asyncio.Event().wait()
        await socket.wait_closed()

    async def ending(self) -> str:
        """Why the server ended the session: its last error event if it sent one before closing
        (``session_expired: ...``), else the websocket's close code and reason."""
        reason = ""
        with contextlib.suppress(*_LOST, TimeoutError):
            async with asyncio.timeout(0.5):
                while True:  # what the server sent before closing is still buffered
                    event = await self.connection.recv()
                    if event.type == "error":
                        error = getattr(event, "error", None)
                        code = getattr(error, "code", None) or "error"
                        reason = f"{code}: {getattr(error, 'message', '')}".strip(": ")
        socket = self._socket
        if reason or socket is None:
            return reason or "the connection closed"
        return f"close code {socket.close_code} {socket.close_reason or ''}".strip()

    async def send_input(self, request: TurnRequest, conversation: Conversation) -> None:
        """Tell the session a turn: what happened at the table since the NPC last heard
        (once across all its sessions), the campaign facts, the DM's direction, then the
        player's words or audio.
        Starts the turn's record for carrying over."""
        connection = self.connection
        fresh = [
            line
            for line in request.scene
            if line.at > conversation.scene_sent_at
            and not (line.npc is None and line.text.strip() == request.text.strip())
        ]
        # every line so far is now known to the NPC: told as context, or this turn's own line
        self.scene_upto = max((line.at for line in request.scene), default=float("-inf"))
        context = []
        if fresh:
            context.append("Meanwhile at the table:\n" + render_scene(fresh, request.npc.name))
        if request.entity_snapshot:
            context.append(f"Facts from the campaign notes:\n{request.entity_snapshot.strip()}")
        if request.notes:  # the table's roll or lookup for this turn
            context.append(request.notes)
        if request.direction:  # the DM's private direction: this turn only, never carried over
            context.append(direction_note(request.direction))
        if context:
            await connection.conversation.item.create(
                item=wire.message("system", "\n\n".join(context))
            )
        text = f"{request.speaker} says to you: {request.text.strip()}"
        if request.reacting_to:
            text = reaction_instruction(request.npc.name, request.reacting_to, request.text)
        self.said = text if request.text.strip() else f"{request.speaker} spoke to you"
        self.context = context[0] if fresh else None
        self.transcript = []
        self.heard_share = None
        if request.audio:
            for piece in wire.audio_appends(request.audio):
                await connection.input_audio_buffer.append(audio=piece)
            await connection.input_audio_buffer.commit()
        else:
            await connection.conversation.item.create(item=wire.message("user", text))

    async def close(self) -> None:
        """Close the connection (the server forgets the conversation)."""
        self.retired = True
        with contextlib.suppress(Exception):
            await self.manager.__aexit__(None, None, None)


async def open_session(
    client: AsyncOpenAI,
    model: str,
    *,
    npc: str,
    instructions: str,
    voice: str,
    declared: tuple[Tier, tuple[str, ...]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    carried: list[dict[str, Any]] | None = None,
) -> RealtimeSession:
    """Connect and set up a session: persona and voice, the tools already declared for this
    NPC (a renewed session offers the same ones), then the conversation carried over.

    A connection that fails while being set up is closed, not left open, and the error is our
    own (``GlyphoxaError``), naming the NPC.
    """
    manager = client.realtime.connect(model=model)
    try:
        connection: Any = await manager.__aenter__()
    except Exception as error:
        where = getattr(client, "websocket_base_url", None) or getattr(client, "base_url", "")
        raise GlyphoxaError(
            f"cannot reach the realtime API at {where} for {npc}: {error}: check "
            "providers.realtime.base_url and api_key, and that the server runs (glyphoxa doctor)"
        ) from None
    session = RealtimeSession(connection, manager, voice=voice, instructions=instructions)
    try:
        await connection.session.update(session=wire.session_setup(instructions, voice))
        if declared is not None:
            await connection.session.update(session=wire.function_tools(tools or []))
            session.declared, session.tools = declared, list(tools or [])
        for item in carried or []:
            await connection.conversation.item.create(item=item)
    except BaseException as error:
        await session.close()
        if isinstance(error, _LOST):
            raise GlyphoxaError(
                f"realtime connection for {npc} lost while setting it up: {error}"
            ) from None
        raise
    return session


async def ask_summary(
    session: RealtimeSession,
    npc: str,
    timeout_s: float,
    *,
    model: str,
    meter: UsageSink | None = None,
) -> str | None:
    """The old session's own summary of its conversation, or None (logged) when it fails or
    takes longer than ``timeout_s``; the caller then summarizes from its record. The summary's
    tokens are reported to ``meter`` as the NPC's (they are billed like any response)."""

    def record(reported: Any) -> None:
        used = realtime_usage(reported, model=model, npc=npc)
        if used is not None and meter is not None:
            meter.record(used)

    try:
        async with asyncio.timeout(timeout_s):
            await session.connection.response.create(response=wire.summary_request())
            return await _read_summary(session.connection, record)
    except TimeoutError:
        log.warning("realtime session for %s gave no summary within %.0f s", npc, timeout_s)
    except (*_LOST, GlyphoxaError) as error:
        log.warning("realtime session for %s could not summarize: %s", npc, error)
    return None


async def _read_summary(connection: Any, record: Callable[[Any], None]) -> str | None:
    ours: str | None = None
    parts: list[str] = []
    while True:
        event = await connection.recv()
        kind = event.type
        if kind == "error":
            message = getattr(getattr(event, "error", None), "message", "") or str(event)
            raise GlyphoxaError(message)
        if kind == "response.created" and ours is None:
            metadata = getattr(event.response, "metadata", None) or {}
            if metadata.get("purpose", wire.SUMMARY_PURPOSE) == wire.SUMMARY_PURPOSE:
                ours = event.response.id
        elif kind == "response.output_text.delta" and event.response_id == ours:
            parts.append(event.delta)
        elif kind == "response.done" and ours is not None and event.response.id == ours:
            record(getattr(event.response, "usage", None))
            text = "".join(parts).strip()
            return text or None
