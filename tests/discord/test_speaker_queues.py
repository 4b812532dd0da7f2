"""Per-speaker fan-out: a speaker whose packets stop is followed by silence in real time.

A Discord client stops sending a few frames after its player stops talking; the lanes find the
end of an utterance in the audio, so without that silence an utterance would only end when the
player next spoke.
"""

from __future__ import annotations

import asyncio
import time

from bot.voice.receiver import VoiceFrame
from bot.voice.speakers import SpeakerQueues


async def test_silence_follows_a_speaker_whose_packets_stop_for_one_second() -> None:
    got: list[VoiceFrame] = []
    filled = asyncio.Event()

    def push(frame: VoiceFrame) -> None:
        got.append(frame)
        if sum(f.sequence == -1 for f in got) == 50:
            filled.set()

    queues = SpeakerQueues(push)  # fills up to 1 s by default
    started = time.monotonic()
    queues([VoiceFrame(7, 70, n, bytes([1]) * 3840, False) for n in range(5)])
    await asyncio.wait_for(filled.wait(), timeout=10)
    took = time.monotonic() - started
    assert [f.sequence for f in got[:5]] == list(range(5))
    assert all(f.pcm == bytes(3840) and f.user_id == 7 for f in got[5:])
    assert took >= 0.9  # the silence is paced like the audio it stands for
    # Speech again: frames resume at once, and a new gap is filled again.
    filled.clear()
    queues([VoiceFrame(7, 70, 5, bytes([1]) * 3840, False)])
    async with asyncio.timeout(10):
        while sum(f.sequence == -1 for f in got) < 51:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert got[55].sequence == 5
    assert queues.filled >= 51
    await queues.aclose()


async def test_frames_handed_over_late_are_not_a_pause() -> None:
    """A busy event loop hands frames over in bursts; while packets keep reaching the socket,
    no silence may be inserted (it would cut the utterance in two)."""
    got: list[VoiceFrame] = []
    transmitting = True

    def arrivals(user_id: int) -> float | None:
        return time.monotonic() if transmitting else time.monotonic() - 10

    queues = SpeakerQueues(got.append, arrivals=arrivals)
    queues([VoiceFrame(7, 70, n, bytes([1]) * 3840, False) for n in range(5)])
    async with asyncio.timeout(10):
        while len(got) < 5:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)  # the loop "stalls" while packets still arrive at the socket
    assert queues.filled == 0 and len(got) == 5
    queues([VoiceFrame(7, 70, n, bytes([1]) * 3840, False) for n in range(5, 10)])
    transmitting = False  # the player stopped: now the pause is real
    async with asyncio.timeout(10):
        while queues.filled < 50:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert [f.sequence for f in got[:10]] == list(range(10))
    assert all(f.sequence == -1 for f in got[10:])
    await queues.aclose()
