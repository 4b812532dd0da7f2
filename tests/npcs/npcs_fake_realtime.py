"""A local websocket server speaking the OpenAI Realtime GA events, scripted per response.

Like the real server it keeps one conversation per connection (the script sees only what its
own connection received), answers out-of-band ``response.create`` requests (``conversation:
none``) with text, and can end every session after a fixed time with a ``session_expired``
error followed by a close, as OpenAI does at its limit."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

__all__ = ["FakeRealtime", "Reply", "user_texts"]


@dataclass
class Reply:
    """What the server does for one ``response.create``."""

    transcript: str = ""
    audio_chunks: int = 0
    """Chunks of 100 ms (4800 bytes of 24 kHz s16le)."""
    function_call: tuple[str, dict[str, Any]] | None = None
    close: bool = False
    """Drop the websocket right after ``response.created`` (a network failure)."""
    hold: bool = False
    """Stop after the audio and wait for ``response.cancel`` (a barge-in)."""
    chunk_delay_s: float = 0.0
    """Pause between audio chunks (a long answer still streaming)."""
    usage: dict[str, Any] | None = None
    """The ``response.usage`` the completed response reports (as OpenAI's does)."""


def user_texts(received: list[dict[str, Any]]) -> list[str]:
    """The text of every message item a connection was sent (carried over or live)."""
    return [
        part.get("text", "")
        for m in received
        if m["type"] == "conversation.item.create" and m["item"]["type"] == "message"
        for part in m["item"]["content"]
    ]


def _default_summary(received: list[dict[str, Any]]) -> str:
    return "Summary: " + " / ".join(user_texts(received))


@dataclass
class FakeRealtime:
    script: Callable[[list[dict[str, Any]]], Reply]
    """The reply to a ``response.create``, from what this connection received so far."""
    received: list[dict[str, Any]] = field(default_factory=list)
    """Everything every connection received, in order."""
    connections: list[list[dict[str, Any]]] = field(default_factory=list)
    """What each connection received, one list per connection."""
    summarize: Callable[[list[dict[str, Any]]], str] = _default_summary
    """The text of an out-of-band (summary) response, from what the connection received."""
    summary_gate: asyncio.Event | None = None
    """When set, out-of-band responses wait for this event (a slow summary)."""
    summary_asked: asyncio.Event = field(default_factory=asyncio.Event)
    expire_after_s: float | None = None
    """End every session this long after it opened: ``session_expired`` error, then close."""
    expire_connections: int | None = None
    """Only the first this many connections expire (None: all)."""
    expired: int = 0
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    truncated: asyncio.Event = field(default_factory=asyncio.Event)
    base_url: str = ""
    refuse: int = 0
    """Close this many connections right after the handshake (a server error, code 1011)."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def __aenter__(self) -> FakeRealtime:
        self._server = await serve(self._handle, "127.0.0.1", 0)
        port = next(iter(self._server.sockets)).getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == kind]

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    async def _handle(self, ws: ServerConnection) -> None:
        self.paths.append(ws.request.path)
        self.headers.append(dict(ws.request.headers))
        if self.refuse > 0:
            self.refuse -= 1
            await ws.close(1011, "server error")
            return
        mine: list[dict[str, Any]] = []
        self.connections.append(mine)
        session_id = self._id("sess")
        await self._send(ws, "session.created", session={"type": "realtime", "id": session_id})
        expiry = None
        count = self.expire_connections
        if self.expire_after_s is not None and (count is None or len(self.connections) <= count):
            expiry = asyncio.create_task(self._expire(ws, self.expire_after_s))
        try:
            await self._serve(ws, mine)
        finally:
            if expiry is not None:
                expiry.cancel()

    async def wait_until(self, predicate: Callable[[], object], timeout_s: float = 10.0) -> None:
        """Wait until ``predicate()`` is true (it reads the engine's or this server's state)."""
        async with asyncio.timeout(timeout_s):
            while not predicate():  # noqa: ASYNC110 - the state read has no event to await
                await asyncio.sleep(0.01)

    async def _expire(self, ws: ServerConnection, after_s: float) -> None:
        await asyncio.sleep(after_s)
        self.expired += 1
        error = {
            "type": "invalid_request_error",
            "code": "session_expired",
            "message": f"Your session hit the maximum duration of {after_s} seconds.",
        }
        with contextlib.suppress(ConnectionClosed):
            await self._send(ws, "error", error=error)
            await ws.close(1000, "session expired")

    async def _serve(self, ws: ServerConnection, mine: list[dict[str, Any]]) -> None:
        hold_task: asyncio.Task[None] | None = None
        async for raw in ws:
            message = json.loads(raw)
            self.received.append(message)
            mine.append(message)
            kind = message["type"]
            if kind == "session.update":
                await self._send(ws, "session.updated", session=message["session"])
            elif kind == "conversation.item.create":
                item = {"id": self._id("item"), **message["item"]}
                await self._send(ws, "conversation.item.added", item=item)
            elif kind == "input_audio_buffer.commit":
                await self._send(ws, "input_audio_buffer.committed", item_id=self._id("item"))
            elif (
                kind == "response.create"
                and message.get("response", {}).get("conversation") == "none"
            ):
                self.summary_asked.set()
                if self.summary_gate is not None:
                    await self.summary_gate.wait()
                await self._respond_text(ws, message["response"], self.summarize(mine))
            elif kind == "response.create":
                reply = self.script(mine)
                hold_task = asyncio.create_task(self._respond(ws, reply))
                if not reply.hold:
                    await hold_task
            elif kind == "response.cancel":
                self.cancelled.set()
                await self._send(
                    ws,
                    "response.done",
                    response={"id": message.get("response_id"), "status": "cancelled"},
                )
            elif kind == "conversation.item.truncate":
                self.truncated.set()
                await self._send(
                    ws,
                    "conversation.item.truncated",
                    item_id=message["item_id"],
                    content_index=message["content_index"],
                    audio_end_ms=message["audio_end_ms"],
                )

    async def _respond(self, ws: ServerConnection, reply: Reply) -> None:
        response_id = self._id("resp")
        await self._send(
            ws,
            "response.created",
            response={"id": response_id, "object": "realtime.response", "status": "in_progress"},
        )
        if reply.close:
            await ws.close()
            return
        ids = {"response_id": response_id, "output_index": 0}
        if reply.function_call is not None:
            name, arguments = reply.function_call
            item_id, call_id = self._id("item"), self._id("call")
            self.call_ids.append(call_id)
            item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
            await self._send(
                ws, "response.output_item.added", item={**item, "arguments": ""}, **ids
            )
            await self._send(
                ws,
                "response.function_call_arguments.done",
                item_id=item_id,
                call_id=call_id,
                name=name,
                arguments=json.dumps(arguments),
                **ids,
            )
            await self._send(
                ws, "response.done", response={"id": response_id, "status": "completed"}
            )
            return
        item_id = self._id("item")
        item = {"id": item_id, "type": "message", "role": "assistant"}
        await self._send(ws, "response.output_item.added", item=item, **ids)
        part = {"item_id": item_id, "content_index": 0, **ids}
        for index in range(reply.audio_chunks):
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
            pcm = bytes([index % 256]) * 4800
            delta = base64.b64encode(pcm).decode()
            await self._send(ws, "response.output_audio.delta", delta=delta, **part)
        for word in reply.transcript.split(" "):
            await self._send(ws, "response.output_audio_transcript.delta", delta=word + " ", **part)
        if reply.hold:
            return  # the client must cancel
        done: dict[str, Any] = {"id": response_id, "status": "completed"}
        if reply.usage is not None:
            done["usage"] = reply.usage
        await self._send(ws, "response.done", response=done)

    async def _respond_text(self, ws: ServerConnection, request: dict[str, Any], text: str) -> None:
        response_id = self._id("resp")
        response = {
            "id": response_id,
            "object": "realtime.response",
            "conversation_id": None,
            "metadata": request.get("metadata"),
        }
        await self._send(ws, "response.created", response={**response, "status": "in_progress"})
        item_id = self._id("item")
        ids = {"response_id": response_id, "output_index": 0}
        item = {"id": item_id, "type": "message", "role": "assistant"}
        await self._send(ws, "response.output_item.added", item=item, **ids)
        part = {"item_id": item_id, "content_index": 0, **ids}
        await self._send(ws, "response.output_text.delta", delta=text, **part)
        await self._send(ws, "response.output_text.done", text=text, **part)
        usage = {  # as OpenAI reports a text response: every token text, none audio
            "total_tokens": 400 + len(text.split()),
            "input_tokens": 400,
            "output_tokens": len(text.split()),
            "input_token_details": {"text_tokens": 400, "audio_tokens": 0, "cached_tokens": 0},
            "output_token_details": {"text_tokens": len(text.split()), "audio_tokens": 0},
        }
        done = {**response, "status": "completed", "usage": usage}
        await self._send(ws, "response.done", response=done)

    async def _send(self, ws: ServerConnection, kind: str, **fields: Any) -> None:
        await ws.send(json.dumps({"type": kind, "event_id": self._id("evt"), **fields}))
