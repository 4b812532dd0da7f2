"""A local server speaking OpenAI's audio wire protocol, backed by the real local models.

``POST /v1/audio/transcriptions`` (multipart; JSON or SSE ``transcript.text.*`` events) runs
faster-whisper; ``POST /v1/audio/speech`` (``response_format=pcm``) streams Piper audio
resampled to 24 kHz in small pieces. Requests are recorded for assertions.
"""

from __future__ import annotations

import asyncio
import io
import json
import wave
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import soxr
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.audio.speech import FasterWhisperStt, PiperTts
from campaigns.providers.voices import VoiceSettings


class LocalOpenAiAudio:
    def __init__(self, whisper: FasterWhisperStt, piper: PiperTts) -> None:
        self.whisper = whisper
        self.piper = piper
        self.requests: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.base_url = ""

    async def __aenter__(self) -> LocalOpenAiAudio:
        app = Starlette(
            routes=[
                Route("/v1/audio/transcriptions", self.transcriptions, methods=["POST"]),
                Route("/v1/audio/speech", self.speech, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await asyncio.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None and self._task is not None
        self._server.should_exit = True
        await self._task

    async def transcriptions(self, request: Request) -> Response:
        form = await request.form()
        upload = form["file"]
        data = await upload.read()  # type: ignore[union-attr]
        fields = {k: v for k, v in form.items() if k != "file"}
        with wave.open(io.BytesIO(data)) as wav:
            fields["_rate"] = wav.getframerate()
            fields["_channels"] = wav.getnchannels()
            pcm = wav.readframes(wav.getnframes())
        fields["_headers"] = dict(request.headers)
        self.requests.append(fields)
        if self.fail_with:
            return JSONResponse({"error": {"message": "boom"}}, status_code=self.fail_with)
        audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
        text = await asyncio.to_thread(self.whisper.transcribe_sync, audio)
        if fields.get("stream") != "true":
            return JSONResponse({"text": text})

        async def events() -> AsyncIterator[bytes]:
            for i, word in enumerate(text.split(" ")):
                delta = word if i == 0 else " " + word
                event = {"type": "transcript.text.delta", "delta": delta}
                yield f"data: {json.dumps(event)}\n\n".encode()
            done = {"type": "transcript.text.done", "text": text}
            yield f"data: {json.dumps(done)}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")

    async def speech(self, request: Request) -> Response:
        body = await request.json()
        body["_headers"] = dict(request.headers)
        self.requests.append(body)
        if self.fail_with:
            return JSONResponse({"error": {"message": "boom"}}, status_code=self.fail_with)
        assert body["response_format"] == "pcm"

        async def pcm() -> AsyncIterator[bytes]:
            voice = VoiceSettings(speed=float(body.get("speed", 1.0)))
            async for chunk in self.piper.synthesize(body["input"], voice):
                samples = np.frombuffer(chunk.pcm, "<i2").astype(np.float32)
                out = soxr.resample(samples, chunk.sample_rate, 24_000).astype("<i2").tobytes()
                for i in range(0, len(out), 4801):  # odd sizes: the client must re-align samples
                    yield out[i : i + 4801]
                    await asyncio.sleep(0.005)

        return StreamingResponse(pcm(), media_type="audio/pcm")
