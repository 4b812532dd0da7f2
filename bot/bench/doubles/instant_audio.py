"""An instant speech server: OpenAI's audio API (real HTTP, multipart, SSE) with scripted answers.

``POST /v1/audio/transcriptions`` answers with ``transcript(fields)`` (default: one fixed line)
as JSON or as ``transcript.text.*`` SSE events; ``POST /v1/audio/speech`` streams 24 kHz s16le
PCM of a voice-like tone, about 60 ms per character, in 100 ms pieces. It stands in for remote
Whisper and TTS servers where what is measured or tested is everything around them
(``glyphoxa bench tables``, the multi-process tests). ``gate`` (optional) is awaited before each
request with the route's name and fields and may return an HTTP status (or a whole response) to fail
with (a 429, a 503) or hold the request (a slow server). Requests and client connections are
recorded.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
from aiohttp import web

__all__ = ["InstantAudio", "speech_pcm"]

RATE = 24_000
_PIECE = 4800  # 100 ms of 24 kHz s16le
SECONDS_PER_CHAR = 0.06

Gate = Callable[[str, dict[str, Any]], Awaitable["int | web.Response | None"]]


def speech_pcm(seconds: float, rate: int = RATE) -> bytes:
    """A voiced-sounding signal (a 140 Hz buzz with harmonics and a syllable envelope)."""
    t = np.arange(int(seconds * rate)) / rate
    buzz = sum(np.sin(2 * math.pi * 140 * k * t) / k for k in range(1, 6))
    envelope = 0.55 + 0.45 * np.sin(2 * math.pi * 4 * t)
    return (buzz * envelope * 5000).astype("<i2").tobytes()


class InstantAudio:
    """``async with InstantAudio() as audio:`` serves ``audio.base_url`` until the block ends."""

    def __init__(
        self,
        transcript: str | Callable[[dict[str, Any]], str] = "Bartok, what's on tap tonight?",
        *,
        gate: Gate | None = None,
        seconds_per_char: float = SECONDS_PER_CHAR,
    ) -> None:
        self.transcript = transcript
        self.gate = gate
        self.seconds_per_char = seconds_per_char
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.connections: set[tuple[str, int]] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._pcm_cache: dict[int, bytes] = {}

    async def __aenter__(self) -> InstantAudio:
        app = web.Application()
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/audio/speech", self._speech)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def count(self, route: str) -> int:
        return sum(1 for name, _ in self.requests if name == route)

    async def _enter(
        self, request: web.Request, route: str, fields: dict[str, Any]
    ) -> web.Response | None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer is not None:
            self.connections.add((str(peer[0]), int(peer[1])))
        self.requests.append((route, fields))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        verdict = await self.gate(route, fields) if self.gate is not None else None
        return _error(verdict) if isinstance(verdict, int) else verdict

    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        fields: dict[str, Any] = {}
        try:
            async for part in await request.multipart():
                name = getattr(part, "name", None)
                data = await part.read()  # type: ignore[union-attr]
                fields[str(name)] = len(data) if name == "file" else data.decode()
        except ConnectionResetError:  # the client closed mid-upload (a bench step's tables ended)
            return web.Response(status=400, text="connection lost during the upload")
        try:
            refusal = await self._enter(request, "transcriptions", fields)
            if refusal is not None:
                return refusal
            text = self.transcript(fields) if callable(self.transcript) else self.transcript
            if fields.get("stream") != "true":
                return web.json_response({"text": text})
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for i, word in enumerate(text.split(" ")):
                delta = {"type": "transcript.text.delta", "delta": word if i == 0 else " " + word}
                await response.write(f"data: {json.dumps(delta)}\n\n".encode())
            done = {"type": "transcript.text.done", "text": text}
            await response.write(f"data: {json.dumps(done)}\n\n".encode())
            await response.write_eof()
            return response
        finally:
            self.in_flight -= 1

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        try:
            refusal = await self._enter(request, "speech", body)
            if refusal is not None:
                return refusal
            seconds = max(0.3, self.seconds_per_char * len(str(body.get("input", ""))))
            key = int(seconds * 10)
            pcm = self._pcm_cache.get(key)
            if pcm is None:
                pcm = self._pcm_cache[key] = speech_pcm(key / 10)
            response = web.StreamResponse(headers={"Content-Type": "audio/pcm"})
            await response.prepare(request)
            for start in range(0, len(pcm), _PIECE):
                await response.write(pcm[start : start + _PIECE])
                await asyncio.sleep(0)
            await response.write_eof()
            return response
        finally:
            self.in_flight -= 1


def _error(status: int) -> web.Response:
    message = "rate limited" if status == 429 else "server busy"
    return web.json_response({"error": {"message": message, "type": "server_error"}}, status=status)
