"""The Pipecat side of ``glyphoxa bench e2e --peer pipecat``: one Pipecat 1.14 voice pipeline
answering player lines one at a time, run by the Pipecat virtualenv's own python.

Glyphoxa never imports this file: the bench starts it as
``<peer venv>/bin/python bot/bench/pipecat_peer/main.py --config settings.json`` and speaks JSON
lines with it (:mod:`bot.bench.line_protocol`). It imports only Pipecat, its dependencies and
its two siblings (``peer_io``, ``peer_models``).

The pipeline is Pipecat's canonical local voice agent (its getting-started example): transport
input -> Whisper STT -> user context aggregator (Silero VAD, Smart Turn v3 stop strategy) ->
OpenAI-compatible LLM -> Piper TTS -> transport output -> assistant aggregator, with Pipecat's
defaults wherever it recommends them (VAD ``stop_secs`` 0.2 with Smart Turn, sentence
aggregation for a whole-text TTS, interruptions on). The transport is a file-fed microphone
(20 ms frames of 16 kHz mono at real time, then silence, as a microphone would send them) and a
speaker that takes audio at ``playout_speed`` times real time. Model files are the ones
Glyphoxa uses (paths in the settings file), run with the same runtime options as Glyphoxa's.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger
from peer_io import (
    FRAME_S,
    SAMPLE_RATE,
    BenchTransport,
    Line,
    LineObserver,
    ToolBridge,
    send,
)
from peer_models import MatchedWhisperSTT, SileroV6Analyzer, piper_voice_without_spinning
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language
from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

_FINISH_S = 120.0
"""How long a line may take in all, its answer included (a long one at 8x playout: ~10 s)."""
VAD_PARAMS = VADParams(stop_secs=0.2)
"""Pipecat's defaults, spelled out: ``stop_secs`` 0.2 is what Pipecat recommends with Smart
Turn (the turn model, not the silence, decides; its STT timeouts assume 0.2)."""


def build(
    settings: dict[str, Any], observer: LineObserver, tools: ToolBridge
) -> tuple[BenchTransport, Pipeline, dict[str, Any]]:
    """Pipecat's local voice agent on the bench's transport, models and LLM settings; with the
    settings Pipecat chose, for the bench's report."""
    models = settings["models"]
    whisper = settings["whisper"]
    llm_settings = settings["llm"]
    transport = BenchTransport(observer, float(settings.get("playout_speed", 8.0)))
    stt = MatchedWhisperSTT(
        settings=WhisperSTTService.Settings(
            model=models["whisper"], language=Language.EN, initial_prompt=whisper.get("prompt")
        ),
        device="cpu",
        compute_type=whisper["compute_type"],
        cpu_threads=int(whisper["cpu_threads"]),
        decode=whisper["decode"],
    )
    llm = OpenAILLMService(
        base_url=llm_settings["base_url"],
        api_key=llm_settings.get("api_key") or "not-needed",
        settings=OpenAILLMService.Settings(
            model=llm_settings["model"],
            system_instruction=settings["system_prompt"],
            temperature=llm_settings.get("temperature"),
            max_tokens=llm_settings.get("max_tokens"),
        ),
    )
    schemas = []
    for tool in settings["tools"]:
        function = tool["function"]
        parameters = function.get("parameters") or {}
        schemas.append(FunctionSchema(
            name=function["name"], description=function.get("description", ""),
            properties=parameters.get("properties", {}), required=parameters.get("required", []),
        ))  # fmt: skip
        llm.register_function(function["name"], tools)
    piper_path = Path(models["piper"])
    tts = PiperTTSService(
        settings=PiperTTSService.Settings(voice=piper_path.stem), download_dir=piper_path.parent
    )
    tts._voice = piper_voice_without_spinning(piper_path)  # the same file, loaded as ours is
    context = LLMContext(tools=ToolsSchema(standard_tools=schemas)) if schemas else LLMContext()
    turn = LocalSmartTurnAnalyzerV3(smart_turn_model_path=models["smart_turn"])
    user, assistant = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroV6Analyzer(models["silero"], VAD_PARAMS),
            user_turn_strategies=UserTurnStrategies(
                stop=[TurnAnalyzerUserTurnStopStrategy(turn_analyzer=turn)]
            ),
        ),
    )
    pipeline = Pipeline([transport.input(), stt, user, llm, tts, transport.output(), assistant])
    chosen = {
        "vad": VAD_PARAMS.model_dump(),
        "smart_turn": turn.params.model_dump(),
        "user_turn_stop_timeout": user._params.user_turn_stop_timeout,
        "stt_trailing_silence_s": stt._trailing_silence_secs,
        "tts_text_aggregation": str(tts._text_aggregation_mode),
        "audio_out_10ms_chunks": transport.speaker._params.audio_out_10ms_chunks,
    }
    return transport, pipeline, chosen


def read_pcm(path: str) -> bytes:
    with wave.open(path, "rb") as wav:
        if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit PCM")
        return wav.readframes(wav.getnframes())


async def answer(transport: BenchTransport, observer: LineObserver, request: dict[str, Any],
                 timeout_s: float) -> dict[str, Any]:  # fmt: skip
    """Say one line into the pipeline and time its answer."""
    pcm = read_pcm(request["wav"])
    last_voiced = max(0, int(np.ceil(float(request["voiced_end_s"]) / FRAME_S)) - 1)
    line = Line(int(request["index"]))
    observer.line = line
    voiced: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    mic = asyncio.create_task(transport.mic.say(pcm, last_voiced, voiced, stop))
    error = None
    try:
        end = await voiced
        while not line.answered():
            now = time.monotonic()
            if error is None and "first_audio" not in line.at and now - end > timeout_s:
                stage = max(line.at, key=line.at.__getitem__, default="none")
                if line.errors:
                    stage += f"; Pipecat's last error: {line.errors[-1][:300]}"
                error = f"no answer within {timeout_s:g} s (last stage: {stage})"
            if error is not None and line.idle():
                break  # given up, and nothing is left running into the next line
            if now - end > _FINISH_S:
                error = error or f"answer not over {_FINISH_S:g} s after the line"
                break
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await mic
        observer.line = None
    stages = {name: round((at - end) * 1000, 1) for name, at in line.at.items()}
    extra: dict[str, Any] = {"audio_sha256": hashlib.sha256(pcm).hexdigest()[:16],
                             "voiced_end_at": end}  # fmt: skip
    if error is not None and "first_audio" in stages:  # came too late to count
        extra["late_answer_ms"] = stages.pop("first_audio")
    return {"type": "timing", "index": line.index, "voice_to_voice_ms": stages.get("first_audio"),
            "stages_ms": stages, "heard": " ".join(line.heard), "reply": "".join(line.reply),
            "error": error, "extra": extra}  # fmt: skip


async def serve(settings: dict[str, Any]) -> None:
    observer, tools = LineObserver(), ToolBridge()
    transport, pipeline, chosen = build(settings, observer, tools)
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=SAMPLE_RATE, enable_metrics=True),
        observers=[observer],
        idle_timeout_secs=None,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    await asyncio.wait([running, asyncio.create_task(transport.mic.ready.wait())],
                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    if running.done():
        raise RuntimeError("the Pipecat pipeline stopped while starting")
    send({"type": "ready", "pipecat": _version(), **chosen})
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    lines: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def read() -> None:
        while raw := await reader.readline():
            message = json.loads(raw)
            if message.get("type") == "tool_result":
                tools.resolve(message)
            elif message.get("type") == "line":
                await lines.put(message)
            elif message.get("type") == "quit":
                break
        await lines.put(None)

    reading = asyncio.create_task(read())
    timeout_s = float(settings.get("answer_timeout_s", 30.0))
    while (request := await lines.get()) is not None:
        send(await answer(transport, observer, request, timeout_s))
    reading.cancel()
    await runner.cancel()
    await asyncio.gather(running, return_exceptions=True)


def _version() -> str:
    from importlib.metadata import version

    return version("pipecat-ai")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the bench's settings (JSON)")
    parser.add_argument("--verbose", action="store_true", help="Pipecat's own log at DEBUG")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="DEBUG" if args.verbose else "WARNING", diagnose=False)
    settings = json.loads(Path(args.config).read_text(encoding="utf-8"))
    try:
        asyncio.run(serve(settings))
    except Exception as error:  # the bench shows this one line instead of a traceback
        send({"type": "error", "message": f"{type(error).__name__}: {error}"})
        logger.exception("peer failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
