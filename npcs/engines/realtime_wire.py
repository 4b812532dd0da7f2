"""What the realtime engine puts on the wire: OpenAI Realtime (GA protocol) payloads.

Plain builders with no connection state, so the engine reads as the turn it runs and the
protocol's shapes live in one place: 24 kHz mono s16le audio in and out, the session set-up,
function tools converted from the Chat Completions format the tool host speaks, and items.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai.types.realtime import (
        RealtimeResponseCreateParamsParam,
        RealtimeSessionCreateRequestParam,
    )

__all__ = [
    "BYTES_PER_MS",
    "REALTIME_SAMPLE_RATE",
    "SESSION_EXPIRED",
    "SUMMARY_PURPOSE",
    "assistant_message",
    "audio_appends",
    "function_output",
    "function_tools",
    "message",
    "session_setup",
    "summary_request",
]

REALTIME_SAMPLE_RATE = 24_000
BYTES_PER_MS = REALTIME_SAMPLE_RATE * 2 // 1000
_APPEND_CHUNK = REALTIME_SAMPLE_RATE * 2  # one second of audio per append event
_PCM: Any = {"type": "audio/pcm", "rate": REALTIME_SAMPLE_RATE}
SESSION_EXPIRED = "session_expired"
"""The ``error.code`` a Realtime server sends when a session reached its maximum length."""
SUMMARY_PURPOSE = "glyphoxa-summary"
_SUMMARY_INSTRUCTIONS = (
    "Out of character: write a summary of this conversation so far for your own memory, so "
    "you can continue it later without the recording. Name who said what, every fact, name, "
    "promise, price and open question, and how you felt about each person. Plain text, at "
    "most 250 words."
)


def session_setup(instructions: str, voice: str) -> RealtimeSessionCreateRequestParam:
    """The first ``session.update``: persona, audio only, and no server-side turn detection
    (the table's own VAD decides when a player has finished)."""
    return {
        "type": "realtime",
        "instructions": instructions,
        "output_modalities": ["audio"],
        "audio": {
            "input": {"format": _PCM, "turn_detection": None},
            "output": {"format": _PCM, "voice": voice},
        },
    }


def function_tools(tools: Sequence[dict[str, Any]]) -> RealtimeSessionCreateRequestParam:
    """A ``session.update`` declaring Chat Completions ``tools`` as Realtime functions."""
    return {
        "type": "realtime",
        "tools": [
            {
                "type": "function",
                "name": t["function"]["name"],
                "description": t["function"].get("description", ""),
                "parameters": t["function"].get("parameters", {}),
            }
            for t in tools
        ],
        "tool_choice": "auto" if tools else "none",
    }


def message(role: str, text: str) -> dict[str, Any]:
    """A conversation item carrying text from ``role`` (``system`` or ``user``)."""
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def assistant_message(text: str) -> dict[str, Any]:
    """A conversation item carrying what the NPC said (a carried-over turn, as text)."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def summary_request() -> RealtimeResponseCreateParamsParam:
    """An out-of-band ``response.create`` asking the model for a text summary of the
    conversation; it is not added to the conversation and speaks no audio."""
    return {
        "conversation": "none",
        "output_modalities": ["text"],
        "instructions": _SUMMARY_INSTRUCTIONS,
        "metadata": {"purpose": SUMMARY_PURPOSE},
    }


def function_output(call_id: str, output: str) -> dict[str, Any]:
    """A conversation item answering a function call."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def audio_appends(pcm: bytes) -> Iterator[str]:
    """``pcm`` as base64 pieces of at most one second, one per ``input_audio_buffer.append``."""
    for start in range(0, len(pcm), _APPEND_CHUNK):
        yield base64.b64encode(pcm[start : start + _APPEND_CHUNK]).decode()
