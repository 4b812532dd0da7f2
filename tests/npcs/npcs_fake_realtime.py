"""A local websocket server speaking the OpenAI Realtime GA events, scripted per response."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

__all__ = ["FakeRealtime", "Reply"]


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
    usage: dict[str, Any] | None = None
    """The ``response.usage`` the completed response reports (as OpenAI's does)."""


@dataclass
class FakeRealtime:
    script: Callable[[list[dict[str, Any]]], Reply]
    received: list[dict[str, Any]] = field(default_factory=list)
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
        await self._send(ws, "session.created", session={"type": "realtime", "id": "sess_1"})
        hold_task: asyncio.Task[None] | None = None
        async for raw in ws:
            message = json.loads(raw)
            self.received.append(message)
            kind = message["type"]
            if kind == "session.update":
                await self._send(ws, "session.updated", session=message["session"])
            elif kind == "conversation.item.create":
                item = {"id": self._id("item"), **message["item"]}
                await self._send(ws, "conversation.item.added", item=item)
            elif kind == "input_audio_buffer.commit":
                await self._send(ws, "input_audio_buffer.committed", item_id=self._id("item"))
            elif kind == "response.create":
                reply = self.script(self.received)
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

    async def _send(self, ws: ServerConnection, kind: str, **fields: Any) -> None:
        await ws.send(json.dumps({"type": kind, "event_id": self._id("evt"), **fields}))
