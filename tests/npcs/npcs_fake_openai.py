"""A local, scripted OpenAI-compatible chat-completions server speaking real SSE.

Each request is answered by the next ``Step`` of the script (or by a callable deciding from the
request body). Requests are recorded so tests can check exactly what the engine sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakeOpenAI", "Step"]


@dataclass
class Step:
    content: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    """Non-200: answer with this HTTP error instead of a completion."""
    abort_after: int | None = None
    """Drop the connection after this many chunks."""
    hold_after: str | None = None
    """Pause the stream after this text until ``release`` is set."""
    release: asyncio.Event | None = None


class FakeOpenAI:
    def __init__(self, script: list[Step] | Callable[[dict[str, Any]], Step]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.disconnected = asyncio.Event()
        self.request_seen = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def _next(self, body: dict[str, Any]) -> Step:
        if callable(self.script):
            return self.script(body)
        return self.script[len(self.requests) - 1]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.request_seen.set()
        step = self._next(body)
        if step.status != 200:
            error = {"error": {"message": "model overloaded", "type": "server_error"}}
            return web.json_response(error, status=step.status)
        if not body.get("stream"):
            return web.json_response(_completion(step))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for count, chunk in enumerate(_chunks(step)):
                if step.abort_after is not None and count >= step.abort_after:
                    assert request.transport is not None
                    request.transport.abort()
                    return response
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                text = chunk["choices"][0]["delta"].get("content") if chunk["choices"] else None
                if step.hold_after is not None and text and text.endswith(step.hold_after):
                    assert step.release is not None
                    await step.release.wait()
                await asyncio.sleep(0)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            self.disconnected.set()
            raise
        return response


def _base(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chunks(step: Step) -> list[dict[str, Any]]:
    chunks = [_base({"role": "assistant", "content": ""})]
    words = step.content.split(" ") if step.content else []
    for i, word in enumerate(words):
        chunks.append(_base({"content": word + (" " if i < len(words) - 1 else "")}))
    for index, (name, arguments) in enumerate(step.tool_calls):
        raw = json.dumps(arguments)
        half = len(raw) // 2
        chunks.append(
            _base(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{index}_{name}",
                            "type": "function",
                            "function": {"name": name, "arguments": raw[:half]},
                        }
                    ]
                }
            )
        )
        chunks.append(
            _base({"tool_calls": [{"index": index, "function": {"arguments": raw[half:]}}]})
        )
    chunks.append(_base({}, "tool_calls" if step.tool_calls else "stop"))
    return chunks


def _completion(step: Step) -> dict[str, Any]:
    tool_calls = [
        {
            "id": f"call_{i}_{name}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(step.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": step.content or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
