"""The shared table registry: rows on SQLite and PostgreSQL, claims as PostgreSQL advisory locks.

Two registries on one PostgreSQL database behave as two bot processes: only one holds a guild,
a claim vanishes with its connection (a process killed with SIGKILL included), and a registry
whose connection was cut takes its claims back unless another process got there first.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path

import asyncpg
import pytest

from campaigns.memory.table_registry import OpenTableRow, TableRegistry, guild_shard

from .conftest import asyncpg_dsn

ROOT = Path(__file__).resolve().parents[2]
G0, G1 = (2 << 22) | 7, (3 << 22) | 7  # shard 0 and shard 1 of 2


def test_guild_shard_follows_discords_formula() -> None:
    assert [guild_shard(g, 2) for g in (G0, G1)] == [0, 1]
    assert guild_shard(41771983423143937, 10) == (41771983423143937 >> 22) % 10


async def test_rows_round_trip_and_filter_by_shard(registry_url: str) -> None:
    registry = await TableRegistry.open(registry_url, owner="test:1")
    try:
        assert await registry.claim(G0) and await registry.claim(G1)
        await registry.record(OpenTableRow(G0, 11, 12, "campaigns/example", "mem-0"))
        await registry.record(OpenTableRow(G1, 21, None, None))
        state = {"scene": [{"speaker": "Aria", "text": "Hi", "npc": None, "at": 1.5}]}
        await registry.save_state(G0, state, "mem-0")
        row = await registry.get(G0)
        assert row is not None
        assert (row.voice_channel_id, row.text_channel_id, row.campaign) == (
            11,
            12,
            "campaigns/example",
        )
        assert row.state == state and row.memory_session_id == "mem-0" and row.owner == "test:1"
        assert [r.guild_id for r in await registry.rows([1], 2)] == [G1]
        assert {r.guild_id for r in await registry.rows()} == {G0, G1}
        await registry.release(G1)
        await registry.save_state(G1, {"muted": ["Bartok"]}, None)  # not ours: not written
        assert (await registry.get(G1)).state == {}  # type: ignore[union-attr]
        await registry.remove(G0)
        assert await registry.get(G0) is None
    finally:
        await registry.close()


async def test_only_one_process_holds_a_guild(postgres_url: str) -> None:
    first = await TableRegistry.open(postgres_url, owner="a")
    second = await TableRegistry.open(postgres_url, owner="b")
    try:
        assert await first.claim(G0)
        assert not await second.claim(G0)
        assert await second.held_elsewhere(G0)
        assert not await first.held_elsewhere(G0)
        assert await second.claim(G1)
        await first.release(G0)
        assert not await second.held_elsewhere(G0)
        assert await second.claim(G0)
        assert not await first.claim(G0)
    finally:
        await first.close()
        await second.close()


async def test_a_killed_process_loses_its_claim_at_once(postgres_url: str) -> None:
    holder = textwrap.dedent(
        f"""
        import asyncio, sys
        from campaigns.memory.table_registry import TableRegistry

        async def main():
            registry = await TableRegistry.open({postgres_url!r})
            assert await registry.claim({G0})
            print("claimed", flush=True)
            await asyncio.Event().wait()

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", holder, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    other = await TableRegistry.open(postgres_url, owner="replacement")
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.strip() == b"claimed"
        assert not await other.claim(G0)
        os.kill(child.pid, signal.SIGKILL)
        await child.wait()
        # The server notices the closed socket; the claim is free without any timeout of ours.
        async with asyncio.timeout(10):
            while not await other.claim(G0):  # noqa: ASYNC110 - a database has no event
                await asyncio.sleep(0.05)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await other.close()


async def test_a_cut_connection_takes_its_claims_back_unless_taken(postgres_url: str) -> None:
    mine = await TableRegistry.open(postgres_url, owner="mine")
    rival = await TableRegistry.open(postgres_url, owner="rival")
    admin = await asyncpg.connect(asyncpg_dsn(postgres_url))
    try:
        assert await mine.claim(G0) and await mine.claim(G1)
        assert await mine.check_claims() == []  # alive: nothing to do

        async def cut() -> None:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks "
                "WHERE locktype = 'advisory' AND objid = $1",
                G0 & 0xFFFFFFFF,
            )

        await cut()
        async with asyncio.timeout(10):
            # G1 was freed with the connection: the rival takes it.
            while not await rival.claim(G1):  # noqa: ASYNC110 - a database has no event
                await asyncio.sleep(0.05)
        assert await mine.check_claims() == [G1]
        assert mine.holds(G0) and not mine.holds(G1)
        assert not await rival.claim(G0)  # taken back by mine
    finally:
        await admin.close()
        await mine.close()
        await rival.close()


async def test_a_registry_on_sqlite_is_single_process(tmp_path: Path) -> None:
    registry = await TableRegistry.open(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
    try:
        assert not registry.shared
        assert await registry.claim(G0)
        assert not await registry.held_elsewhere(G1)
        assert await registry.check_claims() == []
    finally:
        await registry.close()


@pytest.mark.parametrize("bad", ["not a url", "mysql+aiomysql://x@localhost/db"])
async def test_bad_database_urls_are_clear_errors(bad: str) -> None:
    from campaigns.basics import GlyphoxaError

    with pytest.raises(GlyphoxaError):
        await TableRegistry.open(bad)
