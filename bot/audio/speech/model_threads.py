"""Threads that run native model code, stopped and joined before the interpreter ends.

Whisper's decoder (CTranslate2) and Piper's voices (onnxruntime) run on daemon threads of their
own, so that a forgotten one never keeps the process alive. But Python 3.11 ends a daemon
thread that is still running when the interpreter finalizes by calling ``pthread_exit`` the
moment that thread asks for the GIL again; inside C++ (a model being freed, a decode whose
result is handed back), the forced unwind crosses a ``noexcept`` frame and the whole process
aborts with "terminate called without an active exception" (exit 134), after its work was
done and its output printed (``glyphoxa doctor --only stt`` did, every time).

So every such thread is started here: an ``atexit`` hook, which runs after the main program
and before finalization, asks each live one to stop (its owner's ``stop``) and joins it. A
thread that finishes its current piece of work in time leaves no native frame behind.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["EXIT_JOIN_S", "start_model_thread", "stop_model_threads"]

EXIT_JOIN_S = 30.0
"""The longest wait at exit for model threads to finish the work in hand (a decode or a
sentence takes seconds at most)."""

_lock = threading.Lock()
_live: dict[threading.Thread, Callable[[], None]] = {}


def start_model_thread(
    target: Callable[[], None], *, name: str, stop: Callable[[], None]
) -> threading.Thread:
    """Start a daemon thread that runs native model code; ``stop`` asks it to end soon (it is
    called at exit, from the main thread, and must not block)."""

    def run() -> None:
        try:
            target()
        finally:
            with _lock:
                _live.pop(threading.current_thread(), None)

    thread = threading.Thread(target=run, name=name, daemon=True)
    with _lock:
        _live[thread] = stop
    thread.start()
    return thread


def stop_model_threads(timeout_s: float = EXIT_JOIN_S) -> list[str]:
    """Stop every live model thread and join it; the names of those still running after
    ``timeout_s`` (together) are returned."""
    with _lock:
        live = list(_live.items())
    for _thread, stop in live:
        try:
            stop()
        except Exception as error:  # one owner's failure must not leave the others running
            print(f"glyphoxa: stopping a model thread failed: {error}", file=sys.stderr)
    deadline = time.monotonic() + timeout_s
    for thread, _stop in live:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread, _stop in live if thread.is_alive()]


def _at_exit() -> None:
    stuck = stop_model_threads()
    if stuck:
        print(
            f"glyphoxa: model threads still busy at exit: {', '.join(stuck)}",
            file=sys.stderr,
        )


atexit.register(_at_exit)
