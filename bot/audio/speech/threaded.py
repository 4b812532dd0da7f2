"""Run a blocking generator in a worker thread and consume it as an async iterator.

Used by synthesizers whose engines are synchronous (Piper): the first chunk reaches the event
loop as soon as it exists, and closing the async iterator (barge-in) stops the thread after the
chunk it is working on instead of synthesizing the rest for nobody. The thread is a model
thread (``bot.audio.speech.model_threads``): one still working when the program ends is stopped and
joined before the interpreter finalizes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from bot.audio.speech.model_threads import start_model_thread

__all__ = ["iterate_in_thread"]

T = TypeVar("T")
_DONE = object()


async def iterate_in_thread(
    factory: Callable[[], Iterator[T]], *, name: str = "speech-worker"
) -> AsyncIterator[T]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    stop = threading.Event()

    def put(item: object) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the reader's loop closed after it stopped reading: no one to tell
            pass

    def work() -> None:
        try:
            for item in factory():
                if stop.is_set():
                    break
                put(item)
        except BaseException as error:
            put(error)
        finally:
            put(_DONE)

    start_model_thread(work, name=name, stop=stop.set)
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
