"""The local OpenAI-compatible chat-completions server the scripted models share: stdlib
asyncio, real HTTP and server-sent events, ``GET /v1/models`` as every compatible server
answers it. A subclass writes the answers (:meth:`ScriptedChatServer.stream` and
:meth:`ScriptedChatServer.completion`); every request body is recorded."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Self

__all__ = ["ScriptedChatServer", "sse_chunk"]


def sse_chunk(delta: dict[str, Any], finish: str | None = None, *, model: str) -> bytes:
    """One streamed ``chat.completion.chunk`` carrying ``delta``, as an SSE event."""
    payload = {
        "id": f"chatcmpl-{model}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


class ScriptedChatServer:
    """``async with Server() as llm:`` serves ``llm.base_url`` until the block ends.

    Attributes:
        model: the model id it reports.
        piece_delay_s: the pause between streamed chunks (a model writing word by word).
    """

    model = "scripted"
    piece_delay_s = 0.0

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def stream(self, body: dict[str, Any]) -> list[bytes]:
        """The SSE chunks answering a streamed request (``[DONE]`` is added)."""
        raise NotImplementedError

    def stream_tail(self, body: dict[str, Any], pieces: list[bytes]) -> bytes:
        """What follows the answer's chunks (a usage chunk), before ``[DONE]``."""
        return b""

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to an unstreamed request."""
        raise NotImplementedError

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if head.startswith(b"GET "):
                await self._get(head, writer)
                return
            body = json.loads(await reader.readexactly(length))
            self.requests.append(body)
            if not body.get("stream"):
                payload = json.dumps(self.completion(body)).encode()
                writer.write(_response(b"200 OK", payload))
                await writer.drain()
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            )
            pieces = self.stream(body)
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
                if self.piece_delay_s:
                    await asyncio.sleep(self.piece_delay_s)
            writer.write(self.stream_tail(body, pieces) + b"data: [DONE]\n\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _get(self, head: bytes, writer: asyncio.StreamWriter) -> None:
        """``GET /v1/models`` lists the one model; any other path is not found."""
        path = head.split(b" ", 2)[1].split(b"?")[0]
        if path.rstrip(b"/").endswith(b"/models"):
            status = b"200 OK"
            model = {"id": self.model, "object": "model", "created": 0, "owned_by": "glyphoxa"}
            payload = json.dumps({"object": "list", "data": [model]}).encode()
        else:
            status, payload = b"404 Not Found", b'{"error": {"message": "not found"}}'
        writer.write(_response(status, payload))
        await writer.drain()


def _response(status: bytes, payload: bytes) -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
        + payload
    )
