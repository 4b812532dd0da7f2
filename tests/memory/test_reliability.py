"""Crash safety and concurrent writers, on real processes and the real databases."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from sqlalchemy import text

from campaigns.memory import MemoryStore
from campaigns.memory.database import create_engine

WRITER = Path(__file__).with_name("writer_process.py")
ROOT = Path(__file__).resolve().parents[2]


async def _spawn(url: str, count: int, label: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return await asyncio.create_subprocess_exec(
        sys.executable, str(WRITER), url, str(count), label,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip


async def test_sigkill_mid_session_loses_no_acknowledged_utterance(memory_url: str) -> None:
    writer = await _spawn(memory_url, 0, "Arin")
    assert writer.stdout is not None
    acknowledged: dict[int, str] = {}
    try:
        async with asyncio.timeout(60):
            while len(acknowledged) < 150:
                line = (await writer.stdout.readline()).decode()
                assert line, (await writer.stderr.read()).decode()  # type: ignore[union-attr]
                if line.startswith("ack "):
                    _, number, spoken = line.rstrip("\n").split(" ", 2)
                    acknowledged[int(number)] = spoken
    finally:
        writer.send_signal(signal.SIGKILL)
        await writer.wait()
    assert writer.returncode == -signal.SIGKILL

    store = await MemoryStore.open(memory_url)  # reopen after the crash
    try:
        async with store._read() as conn:
            rows = dict((await conn.execute(text("SELECT id, text FROM utterances"))).all())
        missing = {i: t for i, t in acknowledged.items() if rows.get(i) != t}
        assert not missing, f"{len(missing)} acknowledged utterances lost"
        assert len(rows) >= len(acknowledged)
        # The index survived too, and the crashed session can still be closed and summarised.
        hits = await store.search_sessions("lantern", limit=500)
        assert {h["id"] for h in hits} >= set(acknowledged)
        [session] = await store.list_sessions()
        await store.end_session(session["id"])
        assert (await store.session_summary(session["id"]))["summary"]
    finally:
        await store.close()


async def test_two_processes_and_two_tasks_write_at_once(memory_url: str) -> None:
    store = await MemoryStore.open(memory_url)  # migrate once so the writers race on data only
    writers = [await _spawn(memory_url, 60, label) for label in ("Arin", "Tobble")]

    async def in_process(label: str) -> str:
        session = await store.start_session("same-db", label)
        for number in range(60):
            await store.add_utterance(session, label, f"{label} says {number}",
                                      started_at=number, ended_at=number + 1)  # fmt: skip
        await store.end_session(session)
        return session

    try:
        async with asyncio.timeout(120):
            outputs, local = await asyncio.gather(
                asyncio.gather(*(w.communicate() for w in writers)),
                asyncio.gather(in_process("Vessa"), in_process("Whisper")),
            )
        for writer, (out, err) in zip(writers, outputs, strict=True):
            assert writer.returncode == 0, err.decode()
            assert out.decode().splitlines()[-1] == "done"
        sessions = await store.list_sessions()
        assert sorted(s["title"] for s in sessions) == ["Arin", "Tobble", "Vessa", "Whisper"]
        assert all(s["utterances"] == 60 and s["has_summary"] for s in sessions)
        assert await store.count("utterances") == 240
        assert len(local) == 2
    finally:
        await store.close()


async def test_two_processes_opening_a_new_database_at_once(memory_url: str) -> None:
    """Both run the migration check concurrently; the lock makes the second one a no-op."""
    writers = [await _spawn(memory_url, 5, label) for label in ("Arin", "Tobble")]
    async with asyncio.timeout(60):
        outputs = await asyncio.gather(*(w.communicate() for w in writers))
    for writer, (out, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0, err.decode()
        assert out.decode().splitlines()[-1] == "done"
    store = await MemoryStore.open(memory_url)
    try:
        assert await store.count("utterances") == 10
    finally:
        await store.close()


def test_two_openers_of_a_new_sqlite_file_never_see_database_is_locked(tmp_path: Path) -> None:
    """Both open the same new file at the same instant, 200 times: turning it to WAL mode took
    an exclusive lock SQLite does not wait for, and about one race in twenty failed."""
    failures: list[str] = []
    for attempt in range(200):
        url = f"sqlite+aiosqlite:///{tmp_path / f'race-{attempt}.db'}"
        start = threading.Barrier(2)

        async def open_at_once(url: str = url, start: threading.Barrier = start) -> None:
            engine = create_engine(url)
            try:
                start.wait(timeout=10)
                async with engine.connect():
                    pass
            finally:
                await engine.dispose()

        def opener(run: Callable[[], Coroutine[Any, Any, None]] = open_at_once) -> None:
            try:
                asyncio.run(run())
            except Exception as error:
                failures.append(f"{type(error).__name__}: {error}")

        threads = [threading.Thread(target=opener) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not failures, f"{len(failures)} of 400 opens failed, e.g. {failures[0]}"


async def test_an_in_memory_database_loses_no_write_to_readers_at_the_same_time() -> None:
    """An in-memory SQLite store is one shared connection: readers ending mid-write used to
    roll the write back or be refused ("cannot start a transaction within a transaction")."""
    store = await MemoryStore.open("sqlite+aiosqlite:///:memory:")
    try:
        session_id = await store.start_session("campaign", "one connection")
        usage = {
            "service": "llm", "model": "m", "npc": "Bartok", "calls": 1, "estimated_calls": 0,
            "input_tokens": 3, "output_tokens": 2, "audio_input_tokens": 0,
            "audio_output_tokens": 0, "characters": 0, "audio_seconds": 0.0, "cost_usd": 0.0,
        }  # fmt: skip

        async def write() -> None:
            for i in range(60):
                await store.save_usage(session_id, [{**usage, "calls": i + 1}])
                await store.add_utterance(
                    session_id, "Arin", f"line {i}", started_at=float(i), ended_at=i + 0.5
                )

        async def read() -> None:
            for _ in range(120):
                await store.session_usage(session_id)
                await store.search_history("line", limit=5)

        await asyncio.gather(write(), read(), read())
        (saved,) = await store.session_usage(session_id)
        assert saved["calls"] == 60
        assert await store.count("utterances") == 60
    finally:
        await store.close()
