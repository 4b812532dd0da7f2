"""``python -m bot.rehearsal.clock_probe``: a 20 ms clock in a process of its own.

A thread that does nothing but wake every 20 ms still wakes late when the machine is busy (other
processes, a shared VM). ``glyphoxa bench tables`` runs this probe beside the bot process and
counts only the deadlines the bot misses beyond what the machine itself misses. Each ``report``
line on stdin prints ``{"frames", "late", "max_late_ms"}`` for the time since the last report.
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

    def run(self) -> None:
        started = time.perf_counter()
        frame = 0
        while True:
            frame += 1
            due = started + frame * _FRAME_S
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            late = time.perf_counter() - due
            with self.lock:
                self.frames += 1
                self.late += late > _FRAME_S
                self.max_late_ms = max(self.max_late_ms, late * 1000)

    def report(self) -> dict[str, float]:
        with self.lock:
            out = {"frames": self.frames, "late": self.late, "max_late_ms": self.max_late_ms}
            self.frames, self.late, self.max_late_ms = 0, 0, 0.0
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
