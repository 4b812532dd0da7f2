"""The Pipecat peer's transport and line bookkeeping: a microphone that says a WAV file, a
speaker that timestamps the first answer audio, the observer that times every stage, and the
bridge that sends the LLM's tool calls to the bench.

Part of the Pipecat peer (see ``main.py``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    ErrorFrame,
    FunctionCallsStartedFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.services.llm_service import FunctionCallParams
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import BaseTransport, TransportParams

__all__ = [
    "FRAME_BYTES",
    "FRAME_S",
    "SAMPLE_RATE",
    "BenchTransport",
    "Line",
    "LineObserver",
    "ToolBridge",
    "send",
]

SAMPLE_RATE = 16_000
FRAME_S = 0.02
FRAME_BYTES = int(SAMPLE_RATE * FRAME_S) * 2


def send(message: dict[str, Any]) -> None:
    """One JSON line to the bench (stdout carries nothing else)."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Line:
    """What one player line went through: monotonic times of each stage, the words."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.at: dict[str, float] = {}
        self.heard: list[str] = []
        self.reply: list[str] = []
        self.llm_busy = False
        self.tts_busy = False
        self.bot_speaking = False
        self.errors: list[str] = []
        self.last_activity = time.monotonic()

    def mark(self, stage: str) -> None:
        self.at.setdefault(stage, time.monotonic())
        self.last_activity = time.monotonic()

    def mark_latest(self, stage: str) -> None:
        """For what happens once per speech segment (a VAD stop, a segment's transcript): the
        one that counts is the last before the turn ended ("Bartok," and a breath is one)."""
        if "turn_end" not in self.at:
            self.at[stage] = time.monotonic()
        self.last_activity = time.monotonic()

    def idle(self) -> bool:
        """Neither the LLM, the TTS (sentences still to say) nor the bot's voice is busy, and
        has not been for 0.3 s: the next line will not meet this one's answer."""
        quiet = time.monotonic() - self.last_activity > 0.3
        return quiet and not (self.llm_busy or self.tts_busy or self.bot_speaking)

    def answered(self) -> bool:
        """The answer was heard and everything after it is over."""
        return "first_audio" in self.at and self.idle()


class LineObserver(BaseObserver):
    """Timestamps the stages of the current line from the frames Pipecat passes along."""

    def __init__(self) -> None:
        super().__init__()
        self.line: Line | None = None

    async def on_push_frame(self, data: FramePushed) -> None:
        line, frame = self.line, data.frame
        if line is None or not data.first_push:
            return
        if isinstance(frame, ErrorFrame):
            line.errors.append(str(frame.error))
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            line.mark_latest("vad_stop")
        elif isinstance(frame, UserStoppedSpeakingFrame):
            line.mark("turn_end")
        elif isinstance(frame, TranscriptionFrame):
            line.mark_latest("transcript")
            line.heard.append(frame.text.strip())
        elif isinstance(frame, LLMFullResponseStartFrame):
            line.llm_busy = True
            line.last_activity = time.monotonic()
        elif isinstance(frame, LLMFullResponseEndFrame):
            line.llm_busy = False
            line.last_activity = time.monotonic()
        elif isinstance(frame, LLMTextFrame | FunctionCallsStartedFrame):
            line.mark("llm_first_token")
            if isinstance(frame, LLMTextFrame):
                line.reply.append(frame.text)
        elif isinstance(frame, TTSAudioRawFrame):
            line.mark("tts_first_audio")
        elif isinstance(frame, TTSStartedFrame | TTSStoppedFrame):
            line.tts_busy = isinstance(frame, TTSStartedFrame)
            line.last_activity = time.monotonic()
        elif isinstance(frame, BotStartedSpeakingFrame):
            line.bot_speaking = True
            line.last_activity = time.monotonic()
        elif isinstance(frame, BotStoppedSpeakingFrame):
            line.bot_speaking = False
            line.last_activity = time.monotonic()


class FileMicrophone(BaseInputTransport):
    """A microphone that says a WAV file: 20 ms frames at real time, then silence."""

    def __init__(self, params: TransportParams) -> None:
        super().__init__(params)
        self.ready = asyncio.Event()

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        self.ready.set()

    async def say(self, pcm: bytes, last_voiced: int, voiced: asyncio.Future[float],
                  stop: asyncio.Event) -> None:  # fmt: skip
        """Push ``pcm`` then silence until ``stop``; ``voiced`` gets the monotonic time the
        frame holding the last voiced sample was pushed."""
        silence = bytes(FRAME_BYTES)
        next_at = time.monotonic()
        k = 0
        while not stop.is_set():
            chunk = pcm[k * FRAME_BYTES : (k + 1) * FRAME_BYTES] or silence
            chunk = chunk.ljust(FRAME_BYTES, b"\0")
            await self.push_audio_frame(InputAudioRawFrame(chunk, SAMPLE_RATE, 1))
            if k == last_voiced and not voiced.done():
                voiced.set_result(time.monotonic())
            k += 1
            next_at += FRAME_S
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))


class Speaker(BaseOutputTransport):
    """Takes the bot's audio as a sound card would, at ``speed`` times real time; the first
    audio of a line is its answer's arrival."""

    def __init__(self, params: TransportParams, observer: LineObserver, speed: float) -> None:
        super().__init__(params)
        self.observer = observer
        self.speed = speed

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        line = self.observer.line
        if line is not None and isinstance(frame, TTSAudioRawFrame):
            line.mark("first_audio")
        seconds = len(frame.audio) / 2 / max(1, frame.num_channels) / frame.sample_rate
        await asyncio.sleep(seconds / self.speed)
        return True


class BenchTransport(BaseTransport):
    def __init__(self, observer: LineObserver, speed: float) -> None:
        super().__init__()
        params = TransportParams(
            audio_in_enabled=True, audio_in_sample_rate=SAMPLE_RATE, audio_out_enabled=True
        )
        self.mic = FileMicrophone(params)
        self.speaker = Speaker(params, observer, speed)

    def input(self) -> FileMicrophone:
        return self.mic

    def output(self) -> Speaker:
        return self.speaker


class ToolBridge:
    """Tool calls go to the bench, which runs them on Glyphoxa's tool host."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def __call__(self, params: FunctionCallParams) -> None:
        future = asyncio.get_running_loop().create_future()
        self.waiting[params.tool_call_id] = future
        send({"type": "tool_call", "id": params.tool_call_id, "name": params.function_name,
              "arguments": dict(params.arguments)})  # fmt: skip
        try:
            result = await asyncio.wait_for(future, 60)
        finally:
            self.waiting.pop(params.tool_call_id, None)
        await params.result_callback(result.get("content", ""))

    def resolve(self, message: dict[str, Any]) -> None:
        future = self.waiting.get(str(message.get("id")))
        if future is not None and not future.done():
            future.set_result(message)
