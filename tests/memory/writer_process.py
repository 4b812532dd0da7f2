"""A write-heavy table session in its own process, for the crash and concurrency tests.

``python writer_process.py URL COUNT LABEL`` prints ``session <id>`` and then, after each
``add_utterance`` has returned (committed), ``ack <utterance id> <text>``; ``COUNT`` 0 means
forever. The parent may SIGKILL it at any moment.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time

from campaigns.memory import MemoryStore


async def main(url: str, count: int, label: str) -> None:
    store = await MemoryStore.open(url)
    session = await store.start_session("crash-test", label)
    print(f"session {session}", flush=True)
    numbers = itertools.count() if count == 0 else range(count)
    for number in numbers:
        text = f"{label} line {number} about the lantern"
        now = time.time()
        utterance_id = await store.add_utterance(
            session, label, text, started_at=now, ended_at=now + 0.5, tier="fast"
        )
        print(f"ack {utterance_id} {text}", flush=True)
    await store.end_session(session)
    await store.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
