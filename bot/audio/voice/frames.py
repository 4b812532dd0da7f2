"""What the receive path hands on: 20 ms frames per speaker, to the loop or heard in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

__all__ = ["FrameHearer", "FrameSink", "VoiceFrame", "hear_by_speaker"]


@dataclass(frozen=True, slots=True)
class VoiceFrame:
    """20 ms of one speaker's audio: 48 kHz stereo s16le (3840 bytes), or 16 kHz mono (640
    bytes) from a receiver made with ``decoder=SttSpeakerDecoder``."""

    user_id: int
    ssrc: int
    sequence: int
    pcm: bytes
    concealed: bool


FrameSink = Callable[[Sequence[VoiceFrame]], None]
"""Receives frames on the event loop thread; must not block."""

FrameHearer = Callable[[list[VoiceFrame]], list[VoiceFrame]]
"""Takes frames on the socket thread (never blocking); returns those it did not take."""


def hear_by_speaker(
    frames: list[VoiceFrame], hear: Callable[[int, list[bytes]], bool]
) -> list[VoiceFrame]:
    """A ``FrameHearer`` over ``hear(user_id, pcms)``: each speaker's run of frames in one call
    (a lane runs them through its VAD together, on warm caches); returns what it did not take."""
    left: list[VoiceFrame] = []
    for user_id, run in groupby(frames, key=lambda frame: frame.user_id):
        batch = list(run)
        if not hear(user_id, [frame.pcm for frame in batch]):
            left += batch
    return left
