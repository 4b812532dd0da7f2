"""Per-speaker queues between the receiver (event loop side) and the table session.

Each speaker gets a bounded queue and one pump task that forwards frames in order. A slow
consumer never blocks the receiver: when a queue is full its oldest frame is dropped (and
counted), because fresh audio matters more than stale audio in a conversation.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence

from bot.voice.receiver import VoiceFrame

__all__ = ["FramePush", "SpeakerQueues"]

log = logging.getLogger(__name__)

FramePush = Callable[[VoiceFrame], "Awaitable[object] | object"]


class SpeakerQueues:
    """A :data:`~bot.voice.receiver.FrameSink` fanning frames out to per-speaker pump tasks.

    Args:
        push: called with each frame in order per speaker; may be sync or async.
        max_frames: queue bound per speaker (50 frames = 1 s of audio).
    """

    def __init__(self, push: FramePush, *, max_frames: int = 50) -> None:
        self._push = push
        self._max = max_frames
        self._queues: dict[int, asyncio.Queue[VoiceFrame]] = {}
        self._pumps: dict[int, asyncio.Task[None]] = {}
        self.overflow = 0
        self.forwarded = 0

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
        while True:
            frame = await queue.get()
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
