"""One worker thread per model with a priority queue: finals before partials, stale work skipped.

With several players talking, a partial of one lane must never delay another lane's final
(that is the turn latency players feel), and queued requests must not tie up the event loop's
default executor (which the lanes' VAD pumps use). Requests whose awaiting task was cancelled are
dropped before they run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
from collections.abc import Callable
from typing import Any, TypeVar

from bot.audio.speech.model_threads import start_model_thread

__all__ = ["FINAL", "PARTIAL", "InferenceWorker"]

log = logging.getLogger(__name__)

T = TypeVar("T")
FINAL = 0
PARTIAL = 1


class InferenceWorker:
    """Runs submitted callables one at a time on a dedicated thread, by priority (the thread
    is stopped and joined at exit: ``bot.audio.speech.model_threads``)."""

    def __init__(self, name: str) -> None:
        self._queue: queue.PriorityQueue[tuple[int, int, Any]] = queue.PriorityQueue()
        self._counter = itertools.count()
        self._thread = start_model_thread(self._run, name=name, stop=self.close)

    async def run(self, priority: int, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((priority, next(self._counter), (fn, future, loop)))
        return await future

    def close(self) -> None:
        """Stop after the work in hand (queued work is not run); returns at once."""
        self._queue.put((-1, next(self._counter), None))

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the thread to end after :meth:`close`; whether it did."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            _priority, _seq, item = self._queue.get()
            if item is None:
                return
            self._run_one(*item)
            # The frame of _run_one held the work (and through it the model); nothing of it
            # stays on this thread, so a model is never freed here after its owner let go.
            del item

    def _run_one(
        self, fn: Callable[[], Any], future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop
    ) -> None:
        if future.cancelled():
            return  # nobody waits any more (a partial of an utterance that moved on)
        try:
            result = fn()
        except BaseException as error:  # handed to the awaiting task
            self._deliver(loop, future, error=error)
        else:
            self._deliver(loop, future, result=result)

    @staticmethod
    def _deliver(
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        *,
        result: Any = None,
        error: BaseException | None = None,
    ) -> None:
        def settle() -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to tell
            loop.call_soon_threadsafe(settle)
