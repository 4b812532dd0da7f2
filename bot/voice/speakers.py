"""Per-speaker queues between the receiver (event loop side) and the table session.

Each speaker gets a bounded queue and one pump task that forwards frames in order. A slow
consumer never blocks the receiver: when a queue is full its oldest frame is dropped (and
counted), because fresh audio matters more than stale audio in a conversation.

A Discord client stops sending when its player stops talking (after five silence frames), but
the lanes find the end of an utterance in the audio (``hangover_ms`` of silence). So when a
speaker's packets stop, the pump forwards silence in real time for up to ``fill_s``: without it
an utterance would only end when the player next spoke. "Stopped" is judged by when packets
last reached the socket (``arrivals``), not when frames reached the pump: a busy event loop hands
frames over late, and silence inserted then would cut an utterance in two.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from bot.voice.receiver import VoiceFrame

__all__ = ["FramePush", "SpeakerQueues"]

log = logging.getLogger(__name__)

_FRAME_S = 0.02

FramePush = Callable[[VoiceFrame], "Awaitable[object] | object"]


class SpeakerQueues:
    """A :data:`~bot.voice.receiver.FrameSink` fanning frames out to per-speaker pump tasks.

    Args:
        push: called with each frame in order per speaker; may be sync or async.
        max_frames: queue bound per speaker (150 frames = 3 s of audio).
        gap_s: packets missing this long count as the player having stopped talking.
        fill_s: how much silence to forward after a speaker's last frame (0: none).
        arrivals: ``time.monotonic()`` when a user's last packet arrived (the receiver's
            ``arrived_at``); without it, the last frame handed over counts.
    """

    def __init__(
        self,
        push: FramePush,
        *,
        max_frames: int = 150,
        gap_s: float = 0.1,
        fill_s: float = 1.0,
        arrivals: Callable[[int], float | None] | None = None,
    ) -> None:
        self._push = push
        self._arrivals = arrivals
        self._max = max_frames
        self._gap = gap_s
        self._fill = round(fill_s / _FRAME_S)
        self._queues: dict[int, asyncio.Queue[VoiceFrame]] = {}
        self._pumps: dict[int, asyncio.Task[None]] = {}
        self.overflow = 0
        self.forwarded = 0
        self.filled = 0
        """Silence frames forwarded in gaps."""

    def __call__(self, frames: Sequence[VoiceFrame]) -> None:
        for frame in frames:
            queue = self._queues.get(frame.user_id)
            if queue is None:
                queue = self._open(frame.user_id)
            if queue.full():
                queue.get_nowait()
                self.overflow += 1
            queue.put_nowait(frame)

    def speakers(self) -> list[int]:
        return list(self._queues)

    async def forget(self, user_id: int) -> None:
        self._queues.pop(user_id, None)
        task = self._pumps.pop(user_id, None)
        if task is not None:
            await _cancel(task)

    async def aclose(self) -> None:
        for user_id in list(self._pumps):
            await self.forget(user_id)

    def _open(self, user_id: int) -> asyncio.Queue[VoiceFrame]:
        queue: asyncio.Queue[VoiceFrame] = asyncio.Queue(self._max)
        self._queues[user_id] = queue
        self._pumps[user_id] = asyncio.get_running_loop().create_task(
            self._pump(queue), name=f"speaker-pump:{user_id}"
        )
        return queue

    async def _pump(self, queue: asyncio.Queue[VoiceFrame]) -> None:
        last: VoiceFrame | None = None
        last_at = 0.0
        filled = 0
        while True:
            if last is None or filled >= self._fill:
                frame = await queue.get()
            else:
                quiet_since = max(last_at, self._arrived(last.user_id))
                wait = quiet_since + self._gap - time.monotonic() if not filled else _FRAME_S
                try:
                    frame = await asyncio.wait_for(queue.get(), max(wait, 0.0))
                except TimeoutError:
                    quiet_s = time.monotonic() - max(last_at, self._arrived(last.user_id))
                    if quiet_s < self._gap:
                        continue  # packets are still arriving: their frames are on the way
                    due = min(int(quiet_s / _FRAME_S), self._fill)
                    gap = VoiceFrame(
                        last.user_id, last.ssrc, -1, bytes(len(last.pcm)), concealed=True
                    )
                    while filled < due:
                        filled += 1
                        self.filled += 1
                        await self._forward(gap)
                    continue
            last, last_at, filled = frame, time.monotonic(), 0
            await self._forward(frame)

    def _arrived(self, user_id: int) -> float:
        arrived = self._arrivals(user_id) if self._arrivals is not None else None
        return arrived or 0.0

    async def _forward(self, frame: VoiceFrame) -> None:
        try:
            result = self._push(frame)
            if inspect.isawaitable(result):
                await result
            self.forwarded += 1
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("pushing a frame of user %s failed", frame.user_id)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    try:
        await asyncio.wait_for(task, timeout=2)
    except (asyncio.CancelledError, TimeoutError):
        pass
