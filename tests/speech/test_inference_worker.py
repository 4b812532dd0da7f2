"""The model worker: finals overtake queued partials; abandoned requests never run."""

from __future__ import annotations

import asyncio
import threading

import pytest

from bot.audio.speech.inference import FINAL, PARTIAL, InferenceWorker


async def test_finals_run_before_queued_partials_and_cancelled_work_is_skipped() -> None:
    worker = InferenceWorker("test-inference")
    gate = threading.Event()
    ran: list[str] = []

    def job(name: str) -> str:
        ran.append(name)
        return name

    blocker = asyncio.create_task(worker.run(PARTIAL, lambda: gate.wait(5) and job("blocker")))
    await asyncio.sleep(0.05)  # the worker is now busy with the blocker
    partial = asyncio.create_task(worker.run(PARTIAL, lambda: job("partial")))
    stale = asyncio.create_task(worker.run(PARTIAL, lambda: job("stale")))
    final = asyncio.create_task(worker.run(FINAL, lambda: job("final")))
    await asyncio.sleep(0.01)
    stale.cancel()
    gate.set()
    assert await asyncio.wait_for(final, 5) == "final"
    assert await asyncio.wait_for(partial, 5) == "partial"
    await blocker
    assert ran == ["blocker", "final", "partial"]
    with pytest.raises(asyncio.CancelledError):
        await stale

    def boom() -> None:
        raise ValueError("model exploded")

    with pytest.raises(ValueError, match="exploded"):
        await worker.run(FINAL, boom)
    worker.close()
