"""What a provider call used: tokens, characters, audio seconds, and where to report it.

Engines (LLM rounds, realtime responses) and the speech providers (remote voices and
recognition) report each call's :class:`Usage` to a :class:`UsageSink`; the table's spend
meter (``bot.table.session.spend``) prices it and keeps the night's total. Nothing here knows about
prices: a call only says what it consumed, from the provider's own ``usage`` fields where the
provider reports them, and an estimate (``estimated``) where it does not (a stream cut off by
a barge-in before its usage arrived, a server that never reports usage).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "Service",
    "Usage",
    "UsageSink",
    "estimate_tokens",
    "llm_usage",
    "realtime_usage",
    "record_round",
    "serving_npc",
]

serving_npc: ContextVar[str | None] = ContextVar("serving_npc", default=None)
"""The NPC whose turn the current task serves (set by its turn worker), so a voice request,
which knows only the text and the voice, is counted to the NPC it spoke for."""

Service = Literal["llm", "stt", "tts", "realtime", "embeddings"]
"""Which provider section of ``glyphoxa.yaml`` a call went to."""

#: Characters per token in English text, the usual rule of thumb for an estimate.
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Usage:
    """One provider call's consumption. ``npc`` is the NPC it served (None: the players'
    speech recognition)."""

    service: Service
    model: str
    npc: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    audio_input_tokens: int = 0
    """Realtime only: audio tokens heard (``input_tokens`` then counts text tokens)."""
    audio_output_tokens: int = 0
    """Realtime only: audio tokens spoken (``output_tokens`` then counts text tokens)."""
    characters: int = 0
    """Text-to-speech: characters sent to the voice."""
    audio_seconds: float = 0.0
    """Speech recognition: seconds of audio sent."""
    estimated: bool = False
    """The provider reported no usage for this call; the counts are estimated from text."""


class UsageSink(Protocol):
    """Where a call reports what it used (the table's spend meter)."""

    def record(self, usage: Usage) -> None: ...


def estimate_tokens(text: str) -> int:
    """A text's tokens, estimated from its length (at least one for any text)."""
    return (len(text) + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN


def _messages_text(messages: Sequence[dict[str, Any]]) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(str(function.get("name", "")) + str(function.get("arguments", "")))
    return "".join(parts)


def llm_usage(
    reported: Any,
    *,
    model: str,
    npc: str | None,
    messages: Sequence[dict[str, Any]] = (),
    tools: Sequence[dict[str, Any]] = (),
    written: str = "",
) -> Usage:
    """A chat-completions round's usage: the response's ``usage`` object (``prompt_tokens``,
    ``completion_tokens``), or, where the server sent none, an estimate from the prompt
    (``messages`` and ``tools``) and the text the model ``written``."""
    prompt = getattr(reported, "prompt_tokens", None)
    completion = getattr(reported, "completion_tokens", None)
    if isinstance(prompt, int) and isinstance(completion, int):
        return Usage("llm", model, npc, input_tokens=prompt, output_tokens=completion)
    tool_text = "".join(str(tool) for tool in tools)
    return Usage(
        "llm",
        model,
        npc,
        input_tokens=estimate_tokens(_messages_text(messages) + tool_text),
        output_tokens=estimate_tokens(written) if written else 0,
        estimated=True,
    )


def realtime_usage(reported: Any, *, model: str, npc: str | None) -> Usage | None:
    """A realtime ``response.done``'s ``response.usage`` split into text and audio tokens;
    None when the server sent no usage."""
    if reported is None or getattr(reported, "input_tokens", None) is None:
        return None
    heard = getattr(reported, "input_token_details", None)
    said = getattr(reported, "output_token_details", None)
    audio_in = int(getattr(heard, "audio_tokens", 0) or 0)
    audio_out = int(getattr(said, "audio_tokens", 0) or 0)
    return Usage(
        "realtime",
        model,
        npc,
        input_tokens=max(0, int(reported.input_tokens or 0) - audio_in),
        output_tokens=max(0, int(getattr(reported, "output_tokens", 0) or 0) - audio_out),
        audio_input_tokens=audio_in,
        audio_output_tokens=audio_out,
    )


def record_round(
    sink: UsageSink | None,
    reported: Any,
    params: dict[str, Any],
    npc: str | None,
    written: str = "",
) -> None:
    """Report one chat-completions round (its request ``params``) to ``sink``, if any."""
    if sink is None:
        return
    sink.record(
        llm_usage(
            reported,
            model=str(params.get("model", "")),
            npc=npc,
            messages=params.get("messages", ()),
            tools=params.get("tools", ()),
            written=written,
        )
    )
