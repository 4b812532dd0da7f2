"""Our side of ``glyphoxa bench e2e --peer NAME``: Glyphoxa's table answering player lines one
at a time over the line protocol (:mod:`bot.bench.line_protocol`).

``python -m bot.bench.our_side --llm-base-url URL`` opens the very table ``glyphoxa rehearse``
and the Discord bot open (``open_table``: VAD, Smart Turn, Whisper, the NPC engines, tools,
Piper, the mixer) on the example campaign, lets it warm its LLM prompt cache, says ``ready``
with what its NPC's LLM sees (system prompt, tools, sampling), then plays each line it is sent
as the rehearsal does: one 20 ms frame a tick at real time (the line, then silence), one mixer
frame pulled a tick, until the answer is over. The first NPC frame pulled from the mixer is
its answer's arrival. It also runs tool calls as that NPC would, for the peer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import logging
import math
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

from bot.audio.speech import FRAME_MS, STT_FRAME_BYTES, STT_SAMPLE_RATE
from bot.bench.line_protocol import LineTiming, decode, encode
from campaigns.basics import GlyphoxaError

__all__ = ["main", "play_line"]

log = logging.getLogger(__name__)

_TICK_S = FRAME_MS / 1000
_SPEAKER_ID = "player-1"
_SETTLE_FRAMES = round(1.5 / _TICK_S)
"""Silence after a line before an unanswered one counts as unanswered (as the rehearsal)."""
_ANSWER_TIMEOUT_S = 30.0
_FINISH_S = 120.0
_CONTINUATION_S = 600.0
_PLAYOUT_SPEED = 8.0
"""Pull an answer already playing this much faster than real time (no latency changes)."""


def _send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(encode(message))
    sys.stdout.buffer.flush()


def read_wav(path: str) -> bytes:
    """16 kHz mono 16-bit PCM, refused otherwise."""
    with wave.open(path, "rb") as wav:
        if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (STT_SAMPLE_RATE, 1, 2):
            raise GlyphoxaError(f"{path}: expected 16 kHz mono 16-bit PCM")
        return wav.readframes(wav.getnframes())


async def play_line(
    session: Any, pcm: bytes, voiced_end_s: float, index: int, speaker: str = "Arin"
) -> LineTiming:
    """Say one line into an open table at real time and time its answer (see the module)."""
    frames = [pcm[i : i + STT_FRAME_BYTES].ljust(STT_FRAME_BYTES, b"\0")
              for i in range(0, len(pcm), STT_FRAME_BYTES)]  # fmt: skip
    last_voiced = max(0, math.ceil(voiced_end_s / _TICK_S) - 1)
    silence = bytes(STT_FRAME_BYTES)
    before = len(session.traces)
    heard = False  # an answer began: it may pause between sentences; its trace comes at its end
    end: float | None = None
    error: str | None = None
    next_at = time.monotonic()
    k = 0
    while True:
        session.push_frame(_SPEAKER_ID, speaker, frames[k] if k < len(frames) else silence)
        if k == last_voiced:
            end = time.monotonic()
        session.mixer.next_frame()
        k += 1
        heard = heard or len(session.traces) > before or session.mixer.npc_speaking
        quiet = not session.busy and not session.listening
        if k >= len(frames) and quiet and (heard or k >= len(frames) + _SETTLE_FRAMES):
            break
        now = time.monotonic()
        if end is not None and error is None and not heard and now - end > _ANSWER_TIMEOUT_S:
            error = f"no answer within {_ANSWER_TIMEOUT_S:g} s"  # then wait for quiet: a late
            # answer must not play into the next line
        if end is not None and now - end > _FINISH_S:
            error = error or f"answer not over {_FINISH_S:g} s after the line"
            break
        playing_out = (
            k >= len(frames)
            and (session.mixer.npc_speaking or error is not None)
            and not session.mixer.starved
            and not session.listening
        )
        next_at += _TICK_S / (_PLAYOUT_SPEED if playing_out else 1.0)
        await asyncio.sleep(max(0.0, next_at - now))
    assert end is not None
    timing = _timing(session.traces[before:], end, index, error)
    timing.extra.update(audio_sha256=hashlib.sha256(pcm).hexdigest()[:16], voiced_end_at=end)
    return timing


def _timing(traces: list[Any], end: float, index: int, error: str | None) -> LineTiming:
    played = sorted((t for t in traces if t.playback_start is not None),
                    key=lambda t: t.playback_start)  # fmt: skip
    if not played:
        return LineTiming(index, None, heard=" ".join(t.heard for t in traces),
                          error=error or "no NPC answered", extra={})  # fmt: skip
    trace = played[0]
    if error is not None:  # it came, but too late to count: kept for the record
        late = {"late_answer_ms": round((trace.playback_start - end) * 1000, 1)}
        return LineTiming(index, None, heard=trace.heard, reply=trace.spoken, error=error,
                          extra=late)  # fmt: skip
    marks = {"turn_end": trace.turn_end, "transcript": trace.final_transcript,
             "llm_first_token": trace.first_token, "tts_first_audio": trace.first_audio,
             "first_audio": trace.playback_start}  # fmt: skip
    stages = {name: round((at - end) * 1000, 1) for name, at in marks.items() if at is not None}
    own = {k: round(v, 1) for k, v in trace.stages_ms().items() if isinstance(v, int | float)}
    extra = {"npc": trace.npc, "tier": trace.tier, "speculative": trace.speculative,
             "tools": [tool.name for tool in trace.tools], "table_stages_ms": own}  # fmt: skip
    return LineTiming(index, stages["first_audio"], stages, trace.heard, trace.spoken,
                      error, extra)  # fmt: skip


def _persona(session: Any, npc_name: str) -> dict[str, Any]:
    """What the NPC's LLM sees on a FAST line: system prompt, tools, sampling."""
    from bot.audio.speech.vocabulary import Vocabulary
    from campaigns.basics import Tier
    from npcs.context import build_system_prompt

    npc = session.campaign.find_npc(npc_name)
    if npc is None:
        raise GlyphoxaError(f"no NPC {npc_name!r} in {session.campaign.path}")
    tier = min(Tier.FAST, npc.budget_tier)
    tools = session.tools.openai_tools(npc.tools, tier) if session.tools is not None else []
    return {
        "npc": npc.name,
        "system_prompt": build_system_prompt(npc, has_tools=bool(tools)),
        "tools": tools,
        "tier": tier.label,
        "temperature": npc.llm.temperature,
        "max_tokens": npc.llm.max_tokens,
        "whisper_prompt": Vocabulary.from_campaign(session.campaign).prompt(),
    }


async def _run_tool(session: Any, npc_name: str, call: dict[str, Any]) -> dict[str, Any]:
    from campaigns.basics import Tier

    npc = session.campaign.find_npc(npc_name)
    if session.tools is None or npc is None:
        return {"content": "no tools", "is_error": True}
    result = await session.tools.call(
        str(call.get("name")), call.get("arguments") or {}, whitelist=npc.tools,
        tier=min(Tier.FAST, npc.budget_tier), npc=npc.name, call_id=str(call.get("id") or ""),
    )  # fmt: skip
    return {"content": result.content, "is_error": result.is_error}


def _config(args: argparse.Namespace) -> Any:
    """``glyphoxa.yaml`` with the LLM pointed at the bench's server, set up as the bundled
    server would be (prompt-cache warm-up, answers re-asked in character), and a player's
    continuation to the NPC kept open across the peer's turns: between two of our lines the
    peer answers one, time that a table would not have seen pass (two FAST lines name nobody
    and reach Bartok only as a continuation, within ``tiers.continuation_window_s``)."""
    from bot.settings.loader import load_config

    config = load_config(args.config)
    llm = config.providers.llm
    options = llm.options.model_copy(update={
        "warm_up": True if llm.options.warm_up is None else llm.options.warm_up,
        "retry_in_character": True if llm.options.retry_in_character is None
        else llm.options.retry_in_character,
        "open_in_character": True if llm.options.open_in_character is None
        else llm.options.open_in_character,
    })  # fmt: skip
    llm = llm.model_copy(update={"options": options, "model": args.llm_model or llm.model})
    window = max(config.tiers.continuation_window_s, _CONTINUATION_S)
    return config.model_copy(update={
        "providers": config.providers.model_copy(update={"llm": llm}),
        "tiers": config.tiers.model_copy(update={"continuation_window_s": window}),
    })  # fmt: skip


async def serve(args: argparse.Namespace) -> None:
    from bot.table.assembly.table import open_table
    from bot.telemetry.metrics import Metrics

    def say(message: str) -> None:
        print(f"glyphoxa side: {message}", file=sys.stderr, flush=True)

    config = _config(args)
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    with tempfile.TemporaryDirectory(prefix="glyphoxa-peer-ours-") as folder:
        async with open_table(
            config,
            campaign=args.campaign,
            memory_url=f"sqlite+aiosqlite:///{Path(folder) / 'memory.db'}",
            llm_base_url=args.llm_base_url,
            metrics=Metrics(),
            title="bench: peer comparison",
            progress=say,
            serve_metrics=False,
        ) as session:
            if session.warm_up is not None:
                say("warming up the LLM's prompt cache")
                await asyncio.wait([session.warm_up])
            _send({"type": "ready", **_persona(session, args.npc)})
            while raw := await reader.readline():
                message = decode(raw)
                if message is None or message["type"] == "quit":
                    break
                if message["type"] == "tool_call":
                    result = await _run_tool(session, args.npc, message)
                    _send({"type": "tool_result", "id": message.get("id"), **result})
                elif message["type"] == "line":
                    pcm = read_wav(str(message["wav"]))
                    timing = await play_line(
                        session, pcm, float(message["voiced_end_s"]), int(message["index"])
                    )
                    _send(timing.message())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.bench.our_side", description=__doc__)
    parser.add_argument("--llm-base-url", required=True, help="the shared LLM server")
    parser.add_argument("--llm-model", default=None, help="the model name to ask it for")
    parser.add_argument("--campaign", default=None, help="campaign folder (default: config's)")
    parser.add_argument("--npc", default="Bartok", help="the NPC the lines are said to")
    parser.add_argument("--config", default=None, help="glyphoxa.yaml (default: as glyphoxa)")
    parser.add_argument("--verbose", action="store_true", help="the table's log at INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(serve(args))
    except GlyphoxaError as error:
        _send({"type": "error", "message": str(error)})
        return 1
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
