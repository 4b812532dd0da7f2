"""The line protocol: how the bench hands one player line to a voice pipeline and reads back
when its answer began.

``glyphoxa bench e2e --peer NAME`` runs two pipelines side by side, each in its own process (our
table, :mod:`bot.bench.our_side`; the peer, e.g. ``pipecat_peer/main.py`` in Pipecat's own
virtualenv), and speaks JSON lines with both over stdin and stdout, one message a line:

* bench -> side: ``{"type": "line", "index", "wav", "voiced_end_s", "text", "warm_up"}`` (a 16
  kHz mono WAV to say at real time, then silence until the answer is over; ``voiced_end_s``:
  where its last voiced sample is), ``{"type": "tool_call", "id", "name", "arguments"}`` (ours
  only: run a tool as Bartok would), ``{"type": "tool_result", "id", "content", "is_error"}``
  (the answer to a side's own ``tool_call``), ``{"type": "quit"}``.
* side -> bench: ``{"type": "ready", ...}`` once it can take lines, ``{"type": "timing",
  "index", "voice_to_voice_ms", "stages_ms", "heard", "reply", "error"}`` per line,
  ``{"type": "tool_call", ...}`` (the peer's LLM called a tool: the bench runs it on our tool
  host), ``{"type": "tool_result", ...}`` and ``{"type": "error", "message"}`` (fatal).

Every time is in milliseconds after the side pushed the 20 ms frame holding the line's last
voiced sample, on its own clock: the same reference for both sides, whatever their VADs say.
Stages a side cannot see are left out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["STAGES", "LineRequest", "LineTiming", "decode", "encode"]

#: Stage name -> what it marks (ms after the last voiced frame was pushed).
STAGES: dict[str, str] = {
    "vad_stop": "the VAD reported the end of speech",
    "turn_end": "the turn was declared over",
    "transcript": "the final transcript arrived",
    "llm_first_token": "the LLM's first token (or tool call) arrived",
    "tts_first_audio": "the TTS produced its first audio",
    "first_audio": "the first answer audio left the pipeline (voice-to-voice)",
}


@dataclass(frozen=True, slots=True)
class LineRequest:
    """One player line to say into a pipeline."""

    index: int
    wav: str
    """16 kHz mono 16-bit WAV: the same bytes for both sides."""
    voiced_end_s: float
    text: str = ""
    """What the player says (for reports; the sides only hear the audio)."""
    warm_up: bool = False
    """Said before the measured lines and left out of the figures (both sides' first turn)."""

    def message(self) -> dict[str, Any]:
        return {"type": "line", **asdict(self)}


@dataclass(frozen=True, slots=True)
class LineTiming:
    """What a side reports about one line."""

    index: int
    voice_to_voice_ms: float | None
    stages_ms: dict[str, float] = field(default_factory=dict)
    heard: str = ""
    reply: str = ""
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Side-specific details (ours: the table's own turn trace)."""

    @property
    def answered(self) -> bool:
        return self.error is None and self.voice_to_voice_ms is not None

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> LineTiming:
        v2v = message.get("voice_to_voice_ms")
        stages = message.get("stages_ms") or {}
        return cls(
            index=int(message["index"]),
            voice_to_voice_ms=None if v2v is None else float(v2v),
            stages_ms={str(k): float(v) for k, v in stages.items() if v is not None},
            heard=str(message.get("heard") or ""),
            reply=str(message.get("reply") or ""),
            error=message.get("error"),
            extra=dict(message.get("extra") or {}),
        )

    def message(self) -> dict[str, Any]:
        return {"type": "timing", **asdict(self)}


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line."""
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def decode(raw: bytes) -> dict[str, Any] | None:
    """A protocol message, or None for a line that is not one (a library printed to stdout)."""
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "type" in message else None
