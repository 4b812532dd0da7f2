"""Which Discord tables are open, and which process runs each: the state many processes share.

A row of ``open_tables`` says what a table needs to be resumed (voice channel, campaign, the
memory session, the DM's overrides and mutes, the scene); it lives from ``/session start`` to
``/session stop``, so a process that dies leaves it behind for the next one.

Who runs a table is a *claim*. On PostgreSQL a claim is a session-level advisory lock keyed by
the guild id (``pg_try_advisory_lock(bigint)``; that key space is separate from the two-int4
one), held on one connection this process keeps for claims only. PostgreSQL releases it when
that connection ends, whether the process stopped, crashed or was killed, so a replacement can
take over at once, and two processes can never hold it together. ``check_claims`` notices a
lost connection and takes the claims back, reporting any another process got first. Claims need
a direct connection: a transaction-pooling pgbouncer would hand the lock to whichever client
shares the server connection. On SQLite (one process) claims are kept in memory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, delete, insert, literal_column, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from campaigns.basics import GlyphoxaError
from campaigns.memory.database import create_engine, migrate, write_transaction
from campaigns.memory.models import OpenTable, table_of

__all__ = ["OpenTableRow", "TableRegistry", "guild_shard"]

log = logging.getLogger(__name__)

OPEN_TABLES = table_of(OpenTable)


def guild_shard(guild_id: int, shard_count: int) -> int:
    """The gateway shard that carries a guild (Discord's formula: ``(id >> 22) % count``)."""
    return (guild_id >> 22) % shard_count


@dataclass(frozen=True, slots=True)
class OpenTableRow:
    """One open table as stored; ``state`` is
    ``bot.table.session.snapshot.TableState.as_json()``."""

    guild_id: int
    voice_channel_id: int
    text_channel_id: int | None
    campaign: str | None
    memory_session_id: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    opened_at: float = 0.0
    updated_at: float = 0.0


class TableRegistry:
    """Open-table rows plus this process's claims, over ``memory.url``'s database."""

    def __init__(self, engine: AsyncEngine, owner: str) -> None:
        self._engine = engine
        self.owner = owner
        """``host:pid`` written on the rows this process runs (for people, not for locking)."""
        self._held: set[int] = set()
        self._claims: AsyncConnection | None = None
        self._lock = asyncio.Lock()  # one statement at a time on the claims connection
        self._closed = False

    @classmethod
    async def open(cls, url: str, *, owner: str | None = None) -> TableRegistry:
        """Connect, bring the schema up to date (the memory store's Alembic chain)."""
        engine = create_engine(url)
        try:
            await migrate(engine)
        except (OSError, DBAPIError) as error:
            await engine.dispose()
            raise GlyphoxaError(f"cannot open the table registry: {error}") from None
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine, owner or f"{socket.gethostname()}:{os.getpid()}")

    @property
    def shared(self) -> bool:
        """True when other processes can see these tables (PostgreSQL)."""
        return self._engine.dialect.name == "postgresql"

    async def close(self) -> None:
        """Release every claim (the rows stay: the tables are still open) and disconnect."""
        if self._closed:
            return
        self._closed = True
        if self._claims is not None:
            try:
                await self._claims.close()
            except Exception as error:  # the server may be gone: the locks went with it
                log.debug("closing the claims connection: %s", error)
        self._held.clear()
        await self._engine.dispose()

    # -- claims ------------------------------------------------------------------------------

    def holds(self, guild_id: int) -> bool:
        return guild_id in self._held

    async def claim(self, guild_id: int) -> bool:
        """Take the right to run this guild's table; False when another process has it."""
        if guild_id in self._held:
            return True
        if self.shared and not await self._try_lock(guild_id):
            return False
        self._held.add(guild_id)
        return True

    async def release(self, guild_id: int) -> None:
        """Give the claim up (the table stopped here); a lost connection released it anyway."""
        if guild_id not in self._held:
            return
        self._held.discard(guild_id)
        if not self.shared:
            return
        try:
            await self._on_claims("SELECT pg_advisory_unlock(:key)", guild_id)
        except DBAPIError as error:
            log.warning("releasing the claim on guild %s: %s", guild_id, error)

    async def held_elsewhere(self, guild_id: int) -> bool:
        """True when another process runs this guild's table right now."""
        if guild_id in self._held or not self.shared:
            return False
        if not await self._try_lock(guild_id):
            return True
        await self._on_claims("SELECT pg_advisory_unlock(:key)", guild_id)
        return False

    async def check_claims(self) -> list[int]:
        """Prove the claims connection is alive; after a lost connection, take every claim back.

        Returns the guilds whose claim another process took meanwhile: their tables must stop
        here, because they now run there.
        """
        if not self.shared or not self._held:
            return []
        try:
            await self._on_claims("SELECT 1")
            return []
        except DBAPIError as error:
            log.warning("the claims connection was lost (%s); taking the claims back", error)
        await self._drop_claims_connection()
        lost = []
        for guild_id in sorted(self._held):
            try:
                taken = await self._try_lock(guild_id)
            except DBAPIError as error:
                raise GlyphoxaError(f"the table registry is unreachable: {error}") from None
            if not taken:
                lost.append(guild_id)
                self._held.discard(guild_id)
        return lost

    async def _try_lock(self, guild_id: int) -> bool:
        return bool(await self._on_claims("SELECT pg_try_advisory_lock(:key)", guild_id))

    async def _on_claims(self, sql: str, key: int | None = None) -> Any:
        async with self._lock:
            if self._claims is None:
                connection = await self._engine.connect()
                # No transaction: the connection sits idle between claims, never "idle in
                # transaction", and session-level locks do not depend on one anyway.
                self._claims = await connection.execution_options(isolation_level="AUTOCOMMIT")
            try:
                params = {} if key is None else {"key": key}
                return (await self._claims.execute(text(sql), params)).scalar()
            except DBAPIError:
                await self._drop_claims_connection_locked()
                raise

    async def _drop_claims_connection(self) -> None:
        async with self._lock:
            await self._drop_claims_connection_locked()

    async def _drop_claims_connection_locked(self) -> None:
        if self._claims is None:
            return
        connection, self._claims = self._claims, None
        try:
            await connection.invalidate()
            await connection.close()
        except Exception as error:
            log.debug("dropping the claims connection: %s", error)

    # -- rows --------------------------------------------------------------------------------

    async def record(self, row: OpenTableRow) -> None:
        """Insert or replace a guild's open table (``/session start`` or a resume)."""
        now = time.time()
        values = {
            "voice_channel_id": row.voice_channel_id,
            "text_channel_id": row.text_channel_id,
            "campaign": row.campaign,
            "memory_session_id": row.memory_session_id,
            "state": row.state,
            "owner": self.owner,
            "updated_at": now,
        }
        async with write_transaction(self._engine) as conn:
            changed = await conn.execute(
                update(OPEN_TABLES).where(OPEN_TABLES.c.guild_id == row.guild_id).values(**values)
            )
            if changed.rowcount == 0:
                await conn.execute(
                    insert(OPEN_TABLES).values(guild_id=row.guild_id, opened_at=now, **values)
                )

    async def save_state(
        self, guild_id: int, state: dict[str, Any], memory_session_id: str | None
    ) -> None:
        """Store a running table's state; only while this process holds its claim."""
        if guild_id not in self._held:
            return
        async with write_transaction(self._engine) as conn:
            await conn.execute(
                update(OPEN_TABLES)
                .where(OPEN_TABLES.c.guild_id == guild_id)
                .values(
                    state=state,
                    memory_session_id=memory_session_id,
                    owner=self.owner,
                    updated_at=time.time(),
                )
            )

    async def remove(self, guild_id: int) -> None:
        """The DM closed the table (``/session stop``): nobody resumes it."""
        async with write_transaction(self._engine) as conn:
            await conn.execute(delete(OPEN_TABLES).where(OPEN_TABLES.c.guild_id == guild_id))

    async def get(self, guild_id: int) -> OpenTableRow | None:
        async with self._engine.connect() as conn:
            found = (
                await conn.execute(select(OPEN_TABLES).where(OPEN_TABLES.c.guild_id == guild_id))
            ).first()
        return None if found is None else _row(found._mapping)

    async def rows(
        self, shard_ids: Sequence[int] | None = None, shard_count: int | None = None
    ) -> list[OpenTableRow]:
        """Open tables, only those of guilds on ``shard_ids`` when sharded (oldest first)."""
        query = select(OPEN_TABLES).order_by(OPEN_TABLES.c.opened_at)
        if shard_ids is not None and shard_count:
            shard = OPEN_TABLES.c.guild_id.op(">>")(literal_column("22", Integer)) % shard_count
            query = query.where(shard.in_(list(shard_ids)))
        async with self._engine.connect() as conn:
            found = (await conn.execute(query)).all()
        return [_row(r._mapping) for r in found]


def _row(mapping: Any) -> OpenTableRow:
    return OpenTableRow(
        guild_id=int(mapping["guild_id"]),
        voice_channel_id=int(mapping["voice_channel_id"]),
        text_channel_id=mapping["text_channel_id"],
        campaign=mapping["campaign"],
        memory_session_id=mapping["memory_session_id"],
        state=dict(mapping["state"] or {}),
        owner=mapping["owner"],
        opened_at=float(mapping["opened_at"]),
        updated_at=float(mapping["updated_at"]),
    )
