"""A throw-away PostgreSQL database per test session, shared by the memory and scaling tests.

``GLYPHOXA_TEST_POSTGRES_URL`` names a server (CI starts one); the database is created for the
session and dropped after it, so the server's own databases are never touched.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("GLYPHOXA_TEST_POSTGRES_URL")
BACKENDS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not PG_URL, reason="GLYPHOXA_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def asyncpg_dsn(url: str) -> str:
    """SQLAlchemy's ``postgresql+asyncpg://`` URL as asyncpg's own DSN."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def throwaway_database(prefix: str) -> AsyncIterator[str | None]:
    """A new database's SQLAlchemy URL, dropped on exit (None without a server)."""
    if PG_URL is None:
        yield None
        return
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(asyncpg_dsn(PG_URL))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        admin = await asyncpg.connect(asyncpg_dsn(PG_URL))
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
