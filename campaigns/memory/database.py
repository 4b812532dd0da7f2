"""Engine creation, pragmas, write transactions and schema migrations for the memory store.

SQLite runs in WAL mode with ``synchronous=FULL`` (a committed utterance survives a crash of the
process and of the machine), a busy timeout, and ``BEGIN IMMEDIATE`` for writes so that two writers
queue on the lock instead of failing with "database is locked" when a read upgrades to a write.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from campaigns.basics import GlyphoxaError

__all__ = [
    "BUSY_TIMEOUT_S",
    "OneConnection",
    "create_engine",
    "include_object",
    "migrate",
    "write_transaction",
]

log = logging.getLogger(__name__)

#: How long a writer waits for another writer's lock before giving up.
BUSY_TIMEOUT_S = 30.0
_MIGRATIONS = Path(__file__).parent / "migrations"
_IMMEDIATE = "glyphoxa_immediate"
#: Arbitrary key for PostgreSQL's advisory lock serialising concurrent migrations.
_MIGRATION_LOCK = 0x61797068


def create_engine(url: str) -> AsyncEngine:
    """An async engine for ``sqlite+aiosqlite://`` or ``postgresql+asyncpg://`` URLs."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        shown = url.split("://", 1)[0] + "://..." if "://" in url else repr(url[:40])
        raise GlyphoxaError(  # only the scheme: the rest may hold a password
            f"memory.url ({shown}) is not a database URL; use "
            "sqlite+aiosqlite:///path/memory.db or postgresql+asyncpg://user:password@host/db"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.get_driver_name() != "aiosqlite":
            parsed = parsed.set(drivername="sqlite+aiosqlite")
        database = parsed.database or ""
        kwargs: dict[str, Any] = {"connect_args": {"timeout": BUSY_TIMEOUT_S}}
        if database in ("", ":memory:"):
            kwargs["poolclass"] = StaticPool
        else:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(parsed, **kwargs)
        _install_sqlite_hooks(engine)
        return engine
    if backend == "postgresql":
        if parsed.get_driver_name() != "asyncpg":
            parsed = parsed.set(drivername="postgresql+asyncpg")
        return create_async_engine(parsed, pool_pre_ping=True)
    raise GlyphoxaError(f"memory.url uses {backend!r}; only sqlite and postgresql are supported")


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # We emit BEGIN ourselves (below); the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")  # the rest may wait
        _enable_wal(cursor)
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _enable_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, retried while the file is locked.

    Turning a new database file to WAL needs an exclusive lock, and SQLite does not call the
    busy handler for it (two openers holding shared locks would deadlock), so two processes
    opening a new database at once got "database is locked" about one time in twenty. Waiting
    and trying again is safe: the loser finds the file already in WAL mode.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.002
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as error:  # sqlite3.OperationalError, as the driver adapter raises it
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(delay * random.uniform(1.0, 2.0))  # milliseconds, only in this rare race
        delay = min(delay * 2, 0.05)


@asynccontextmanager
async def write_transaction(
    engine: AsyncEngine, *, commit: bool = True
) -> AsyncIterator[AsyncConnection]:
    """A transaction that commits on exit (``commit=False``: rolls back, for a probe); on
    SQLite it takes the write lock up front."""
    async with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            await connection.execution_options(**{_IMMEDIATE: True})
        async with connection.begin() as transaction:
            yield connection
            if not commit:
                await transaction.rollback()


async def migrate(engine: AsyncEngine) -> None:
    """Upgrade the schema to the newest Alembic revision, in one transaction.

    Concurrent openers serialise on the SQLite write lock or a PostgreSQL advisory lock, so the
    second one finds the schema current and does nothing.
    """
    async with write_transaction(engine) as connection:
        if engine.dialect.name == "postgresql":
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
            )
        await connection.run_sync(_upgrade)


def _upgrade(connection: Connection) -> None:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def include_object(_obj: Any, name: str | None, type_: str, _reflected: bool, _other: Any) -> bool:
    """Alembic filter: full-text objects are dialect-specific and written by hand in migrations."""
    if not name:
        return True
    if type_ == "table" and (name.endswith("_fts") or "_fts_" in name):
        return False
    if type_ == "column" and name == "tsv":
        return False
    return not (type_ == "index" and name.endswith("_tsv"))


class OneConnection:
    """Turns on a database that is one connection (in-memory SQLite under a ``StaticPool``).

    Every reader and writer shares that connection, so a read that ends (its connection
    returned to the pool rolls back) in the middle of a write transaction would undo the
    write, and two transactions at once are refused outright. Readers and writers take turns
    here; a task already holding its turn (a read inside its own write) goes on.
    """

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the connection for the current task (re-entrant within one task)."""
        task = asyncio.current_task()
        if task is not None and task is self._owner:
            yield
            return
        async with self._lock:
            self._owner = task
            try:
                yield
            finally:
                self._owner = None
