"""One NPC turn: engine events -> sentences -> TTS -> the NPC's mixer handle.

The engine and the voice run as two tasks of one group, so the first sentence is synthesized
(and heard) while the LLM is still writing the rest. Cancelling the turn (barge-in, mute)
cancels both; the handle remembers which words were actually played.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bot.audio.speech.handle import SpeechHandle
from bot.audio.speech.protocols import TtsProvider
from bot.table.session.speculation import Speculation
from bot.table.session.trace import ToolUse, TurnTrace
from campaigns.basics import AudioChunk, GlyphoxaError, Tier
from npcs.context import SceneLine
from npcs.engines import (
    Caption,
    Engine,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)
from npcs.engines.fillers import FillerPicker
from npcs.schema import NpcDefinition
from npcs.sentences import split_sentences
from tools.host.types import ToolResult

__all__ = ["NpcTurn", "run_turn", "speakable", "tool_use"]

#: Characters of a tool call's arguments and result the trace keeps (for displays).
_SHOWN_CHARS = 500
_MARKUP = re.compile(r"```\w*|[`*_#>|~]+")
_SPEAKABLE = re.compile(r"[A-Za-z0-9]")


def speakable(text: str) -> str:
    """What a voice should say: HTML entities decoded, markdown symbols dropped, spaces
    collapsed; empty when nothing pronounceable is left (a stray code fence)."""
    text = html.unescape(html.unescape(text))
    text = " ".join(_MARKUP.sub(" ", text).split())
    return text if _SPEAKABLE.search(text) else ""


log = logging.getLogger(__name__)

#: Lines an NPC says when its answer failed before it said anything.
_FALLBACKS = FillerPicker()


@dataclass(slots=True)
class NpcTurn:
    """A turn waiting for or holding its NPC. ``verbatim`` turns (DM ``say``) skip the LLM."""

    npc: str
    speaker: str
    text: str
    tier: Tier
    trace: TurnTrace
    handle: SpeechHandle
    verbatim: str | None = None
    snapshot: Callable[[], Awaitable[str | None]] | None = None
    speculation: Speculation | None = None
    """An engine run already started on the partial that matched this turn's final."""
    direction: str | None = None
    """The DM's private direction for this answer (its prompt only)."""
    task: asyncio.Task[None] | None = None
    floor_at: float | None = None
    cancelled_by: str | None = field(default=None)
    reacting_to: str | None = None
    """A reaction to what this NPC just said (``text``); see ``bot.table.session.reactions``."""
    max_sentences: int | None = None
    """Say at most this many sentences (a short reaction); None: the whole answer."""


async def run_turn(
    turn: NpcTurn,
    *,
    npc: NpcDefinition,
    engine: Engine | None,
    tts: TtsProvider,
    scene: Sequence[SceneLine],
) -> None:
    """Produce and voice one turn into ``turn.handle``; always finishes the handle."""
    trace = turn.trace
    handle = turn.handle
    sentences: asyncio.Queue[str | None] = asyncio.Queue()

    def say(text: str) -> None:
        text = speakable(text)
        if not text:
            return
        if trace.first_sentence is None:
            trace.first_sentence = time.monotonic()
        sentences.put_nowait(text)

    async def produce() -> None:
        try:
            await answer()
        except Exception as error:  # the NPC says a line of its own instead of going silent
            trace.error = str(error) if isinstance(error, GlyphoxaError) else repr(error)
            log.error("turn %d of %s failed: %s", trace.turn_id, turn.npc, trace.error)
            if trace.first_sentence is None:
                trace.fallback = _FALLBACKS.pick(npc.name, npc.filler_lines)
                say(trace.fallback)
        finally:
            sentences.put_nowait(None)

    async def answer() -> None:
        trace.engine_start = time.monotonic()
        if turn.verbatim is not None or engine is None:
            trace.first_token = trace.engine_start
            text = turn.verbatim or ""
            for sentence in split_sentences(text) or ([text] if text.strip() else []):
                say(sentence)
            trace.reply = text
            return
        if turn.speculation is not None:
            trace.engine_start = turn.speculation.started
            source = turn.speculation.events()
        else:
            snapshot = await turn.snapshot() if turn.snapshot is not None else None
            request = TurnRequest(
                npc=npc,
                speaker=turn.speaker,
                text=turn.text,
                tier=turn.tier,
                scene=list(scene),
                entity_snapshot=snapshot,
                played_ms=lambda: handle.played_s * 1000.0,
                direction=turn.direction,
                reacting_to=turn.reacting_to,
            )
            trace.engine_start = time.monotonic()
            source = engine.respond(request)
        spoken: list[str] = []
        async with contextlib.aclosing(source) as events:  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, FirstToken):
                    trace.first_token = trace.first_token or event.at
                elif isinstance(event, Sentence):
                    spoken.append(event.text)
                    say(event.text)
                    if turn.max_sentences is not None and len(spoken) >= turn.max_sentences:
                        break  # closing the stream ends the engine's turn
                elif isinstance(event, Filler):
                    say(event.text)
                elif isinstance(event, AudioChunk):
                    _feed_audio(turn, event)
                elif isinstance(event, Caption):
                    handle.caption(event.text)
                elif isinstance(event, ToolsUsed):
                    trace.tool_cost_ms += event.report.cost_ms
                    trace.tools.extend(tool_use(r) for r in event.report.results)
                elif isinstance(event, TurnDone):
                    trace.reply = event.text or " ".join(spoken)
                    trace.budget_words = event.budget_words
                    trace.budget_hit = event.budget_hit
                    trace.repairs = dict(event.repairs)
                    if trace.first_audio is not None and not spoken and event.text:
                        handle.caption(event.text)  # speech-to-speech: the whole transcript
        if not trace.reply:
            trace.reply = " ".join(spoken)
        if trace.first_sentence is None and not handle.done():
            raise GlyphoxaError("the model's answer had nothing speakable, even asked again")

    async def voice() -> None:
        while (sentence := await sentences.get()) is not None:
            if handle.done():
                continue  # keep draining so the producer never blocks; nothing more to say
            started = time.monotonic()
            first_chunk = True
            ahead = turn.speculation.voiced.get(sentence) if turn.speculation else None
            source = _replay(ahead) if ahead is not None else tts.synthesize(sentence, npc.voice)
            async with contextlib.aclosing(source) as chunks:  # type: ignore[type-var]
                async for chunk in chunks:
                    if handle.done():
                        break
                    if trace.first_audio is None:
                        trace.first_audio = time.monotonic()
                        trace.tts_compute_ms = (trace.first_audio - started) * 1000.0
                    handle.feed(chunk, text=sentence if first_chunk else None)
                    first_chunk = False

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(produce(), name=f"turn:{turn.npc}:{trace.turn_id}:engine")
            group.create_task(voice(), name=f"turn:{turn.npc}:{trace.turn_id}:voice")
    except* Exception as errors:
        first = errors.exceptions[0]
        trace.error = f"{type(first).__name__}: {first}"
        log.error("turn %d of %s failed: %s", trace.turn_id, turn.npc, trace.error)
    finally:
        handle.finish()
        if turn.speculation is not None:
            turn.speculation.cancel()  # audio synthesized ahead for sentences never reached


def tool_use(result: ToolResult) -> ToolUse:
    """What the trace keeps of one call: its outcome, and its arguments and result shortened
    for the DM's console."""
    arguments = result.arguments
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments or {}, ensure_ascii=False, default=str)
    return ToolUse(
        result.name,
        result.status,
        round(result.duration_ms, 2),
        _shorten(arguments),
        _shorten(result.content),
        result.approval,
    )


def _shorten(text: str, limit: int = _SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _feed_audio(turn: NpcTurn, event: AudioChunk) -> None:
    """Speech-to-speech engines hand us audio directly (their text arrives with TurnDone)."""
    trace = turn.trace
    if turn.handle.done():
        return
    if trace.first_audio is None:
        trace.first_audio = time.monotonic()
        trace.first_sentence = trace.first_sentence or trace.first_audio
    turn.handle.feed(event, text=None)


async def _replay(ahead: asyncio.Task[list[AudioChunk]]) -> AsyncIterator[AudioChunk]:
    """Audio synthesized during speculation (the TTS time already happened)."""
    for chunk in await ahead:
        yield chunk
