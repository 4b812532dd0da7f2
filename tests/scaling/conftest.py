"""Fixtures of the scaling tests: registries on SQLite and on a throw-away PostgreSQL database.

PostgreSQL tests need ``GLYPHOXA_TEST_POSTGRES_URL`` (CI starts a server); the session gets its
own database, dropped at the end, and every test starts with an empty ``open_tables``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("GLYPHOXA_TEST_POSTGRES_URL")
needs_postgres = [
    pytest.mark.postgres,
    pytest.mark.skipif(not PG_URL, reason="GLYPHOXA_TEST_POSTGRES_URL is not set"),
]
BACKENDS = ["sqlite", pytest.param("postgres", marks=needs_postgres)]


def asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
async def scaling_postgres() -> AsyncIterator[str | None]:
    """A throw-away PostgreSQL database for this test session (None without a server)."""
    if PG_URL is None:
        yield None
        return
    name = f"glyphoxa_s_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(asyncpg_dsn(PG_URL))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    admin = await asyncpg.connect(asyncpg_dsn(PG_URL))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def postgres_url(scaling_postgres: str | None) -> AsyncIterator[str]:
    """The session's PostgreSQL database with no open tables left by another test."""
    if scaling_postgres is None:
        pytest.skip("GLYPHOXA_TEST_POSTGRES_URL is not set")
    connection = await asyncpg.connect(asyncpg_dsn(scaling_postgres))
    try:
        exists = await connection.fetchval("SELECT to_regclass('public.open_tables')")
        if exists is not None:
            await connection.execute("DELETE FROM open_tables")
    finally:
        await connection.close()
    yield scaling_postgres


@pytest.fixture(params=BACKENDS)
async def registry_url(
    request: pytest.FixtureRequest, tmp_path: Path, scaling_postgres: str | None
) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
        return
    assert scaling_postgres is not None
    connection = await asyncpg.connect(asyncpg_dsn(scaling_postgres))
    try:
        exists = await connection.fetchval("SELECT to_regclass('public.open_tables')")
        if exists is not None:
            await connection.execute("DELETE FROM open_tables")
    finally:
        await connection.close()
    yield scaling_postgres
