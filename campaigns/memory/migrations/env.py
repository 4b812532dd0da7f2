"""Alembic environment for the campaign memory.

``MemoryStore.open`` runs migrations on its own async connection (passed in
``config.attributes["connection"]``), so the upgrade shares the store's locking and pragmas. Run
stand-alone (``alembic -x url=...``), this file opens its own async engine.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from campaigns.memory.database import include_object
from campaigns.memory.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("pass the database URL: alembic -x url=sqlite+aiosqlite:///memory.db ...")
    asyncio.run(_run_async(url))
