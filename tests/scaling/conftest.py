"""Fixtures of the scaling tests: registries on SQLite and on a throw-away PostgreSQL database.

PostgreSQL tests need ``GLYPHOXA_TEST_POSTGRES_URL`` (CI starts a server); the session gets its
own database, dropped at the end, and every test starts with an empty ``open_tables``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from ..postgres_db import BACKENDS, asyncpg_dsn, throwaway_database

__all__ = ["asyncpg_dsn"]


@pytest.fixture(scope="session")
async def scaling_postgres() -> AsyncIterator[str | None]:
    """A throw-away PostgreSQL database for this test session (None without a server)."""
    async with throwaway_database("glyphoxa_s") as url:
        yield url


async def _without_open_tables(url: str) -> str:
    """``url``'s database with no open tables left by another test."""
    connection = await asyncpg.connect(asyncpg_dsn(url))
    try:
        exists = await connection.fetchval("SELECT to_regclass('public.open_tables')")
        if exists is not None:
            await connection.execute("DELETE FROM open_tables")
    finally:
        await connection.close()
    return url


@pytest.fixture
async def postgres_url(scaling_postgres: str | None) -> AsyncIterator[str]:
    """The session's PostgreSQL database with no open tables left by another test."""
    if scaling_postgres is None:
        pytest.skip("GLYPHOXA_TEST_POSTGRES_URL is not set")
    yield await _without_open_tables(scaling_postgres)


@pytest.fixture(params=BACKENDS)
async def registry_url(
    request: pytest.FixtureRequest, tmp_path: Path, scaling_postgres: str | None
) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
        return
    assert scaling_postgres is not None
    yield await _without_open_tables(scaling_postgres)
