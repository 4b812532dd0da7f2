"""Typed events a ``SpeakerLane`` yields, in the order a player's utterance produces them.

Times: ``stream_time`` is seconds of audio pushed into that lane (a per-speaker clock that works
faster than real time in rehearsal); ``wall_time`` is ``time.monotonic()`` when the event was
produced (for latency traces). One utterance: ``SpeechStarted`` -> ``SpeechProgress``*,
``PartialTranscript``* and ``TurnCheck``* (one per judged pause) -> ``SpeechEnded`` -> exactly one
of ``FinalTranscript`` / ``Backchannel`` (or nothing if the recognizer heard no words). Events of
the next utterance may interleave with the final of the previous one; match them by
``utterance_id``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Backchannel",
    "FinalTranscript",
    "LaneEvent",
    "PartialTranscript",
    "SpeechEnded",
    "SpeechProgress",
    "SpeechStarted",
    "TurnCheck",
]


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """VAD confirmed speech (after ``min_speech_ms``); ``stream_time`` is the onset."""

    speaker: str
    utterance_id: int
    stream_time: float
    wall_time: float


@dataclass(frozen=True, slots=True)
class SpeechProgress:
    """Emitted about every 50 ms while the player is speaking; drives barge-in confirmation."""

    speaker: str
    utterance_id: int
    voiced_ms: float
    """Speech so far in this utterance, from onset."""
    stream_time: float
    wall_time: float
    trailing_silence_ms: float = 0.0
    """Silence since the last voiced audio (small again when the player talks on)."""


@dataclass(frozen=True, slots=True)
class PartialTranscript:
    """Best guess of the words so far (re-transcribed about every ``partial_interval_ms``)."""

    speaker: str
    utterance_id: int
    text: str
    stream_time: float
    wall_time: float


@dataclass(frozen=True, slots=True)
class TurnCheck:
    """The lane judged a pause: the words so far and whether the turn sounds finished."""

    speaker: str
    utterance_id: int
    text: str
    complete: bool
    wait_ms: float
    """Silence the turn now needs before it ends."""
    reason: str
    probability: float | None
    wall_time: float


@dataclass(frozen=True, slots=True)
class SpeechEnded:
    """The turn is over (the lane's verdict, or the hangover; ``max_utterance_s`` hit, then
    ``truncated``); the final follows."""

    speaker: str
    utterance_id: int
    started_at: float
    """Stream time of the onset."""
    stream_time: float
    """Stream time of the last voiced audio."""
    wall_time: float
    truncated: bool = False
    reason: str = "hangover"
    """``turn model`` (a judged pause), ``hangover``, ``max length`` or ``end of input``."""
    silence_ms: float = 0.0
    """Silence heard after the last voiced audio before the turn was declared over."""

    @property
    def duration_s(self) -> float:
        return self.stream_time - self.started_at


@dataclass(frozen=True, slots=True)
class FinalTranscript:
    """The utterance's text after vocabulary correction: a player turn."""

    speaker: str
    utterance_id: int
    text: str
    started_at: float
    ended_at: float
    wall_time: float
    speech_end_wall_time: float
    """``wall_time`` of the matching ``SpeechEnded``: final latency = wall_time - this."""
    truncated: bool = False
    stt_ms: float | None = None
    """Recognition time of these words (at the pause they were heard at, or after the end)."""


@dataclass(frozen=True, slots=True)
class Backchannel:
    """The utterance was only "mhm"/"yeah"/...: no turn, no barge-in."""

    speaker: str
    utterance_id: int
    text: str
    wall_time: float


LaneEvent = (
    SpeechStarted
    | SpeechProgress
    | PartialTranscript
    | TurnCheck
    | SpeechEnded
    | FinalTranscript
    | Backchannel
)
