"""``python -m bot.bench.doubles.clock_probe``: a 20 ms clock in a process of its own.

A thread that does nothing but wake every 20 ms still wakes late when the machine is busy (other
processes, a shared VM). ``glyphoxa bench tables`` runs this probe beside the bot process and
excuses the bot's late frames that overlap one of the probe's (the machine stalled both). Each
``report`` line on stdin prints ``{"frames", "late", "max_late_ms", "spans"}`` for the time since
the last report; ``spans`` are the late frames as ``[due, sent]`` in ``time.monotonic()``
seconds, a clock every process on the machine shares.
"""

from __future__ import annotations

import json
import sys
import threading
import time

__all__ = ["main"]

_FRAME_S = 0.020


class _Clock:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.frames = 0
        self.late = 0
        self.max_late_ms = 0.0
        self.spans: list[list[float]] = []

    def run(self) -> None:
        started = time.monotonic()
        frame = 0
        while True:
            frame += 1
            due = started + frame * _FRAME_S
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.monotonic()
            late = now - due
            with self.lock:
                self.frames += 1
                self.max_late_ms = max(self.max_late_ms, late * 1000)
                if late > _FRAME_S:
                    self.late += 1
                    if len(self.spans) < 20_000:
                        self.spans.append([due, now])

    def report(self) -> dict[str, object]:
        with self.lock:
            out = {"frames": self.frames, "late": self.late, "max_late_ms": self.max_late_ms,
                   "spans": self.spans}  # fmt: skip
            self.frames, self.late, self.max_late_ms, self.spans = 0, 0, 0.0, []
        return out


def main() -> int:
    clock = _Clock()
    threading.Thread(target=clock.run, name="clock", daemon=True).start()
    for line in sys.stdin:
        if line.strip() == "report":
            print(json.dumps(clock.report()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
