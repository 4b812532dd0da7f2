"""Doctor check of the shared table state: the registry opens and claims exclude each other.

On PostgreSQL two connections stand in for two bot processes: the first claims a probe key, the
second must be refused. A connection pooler in transaction mode (pgbouncer's default for many
hosts) hands one server session to several clients, so both would "hold" it and two processes
could run one table: that is reported with its fix.
"""

from __future__ import annotations

from bot.frontends.doctor.runner import DoctorContext, Problem

__all__ = ["check_tables"]

#: Not a guild id (those are snowflakes far above 2**22): a key only the doctor uses.
_PROBE_KEY = 0x676C7970


async def check_tables(context: DoctorContext) -> str:
    from campaigns.memory.table_registry import TableRegistry

    url = context.config.memory.url
    try:
        first = await TableRegistry.open(url, owner="doctor-1")
    except Exception as error:
        raise Problem(
            f"the table registry did not open: {error}",
            "check memory.url and that the database server runs",
        ) from None
    try:
        rows = await first.rows()
        if not first.shared:
            return (
                f"{len(rows)} open table(s), kept for restarts of this one process (SQLite); "
                "use a PostgreSQL memory.url to run tables in several processes"
            )
        second = await TableRegistry.open(url, owner="doctor-2")
        try:
            return await _probe_claims(first, second, len(rows))
        finally:
            await second.close()
    finally:
        await first.close()


async def _probe_claims(first: object, second: object, open_tables: int) -> str:
    from campaigns.memory.table_registry import TableRegistry

    assert isinstance(first, TableRegistry) and isinstance(second, TableRegistry)
    if not await first.claim(_PROBE_KEY):
        raise Problem(
            "another process holds the doctor's probe claim",
            "run glyphoxa doctor again when the other doctor has finished",
        )
    try:
        if await second.claim(_PROBE_KEY):
            await second.release(_PROBE_KEY)
            raise Problem(
                "two connections both took one claim: PostgreSQL advisory locks do not hold "
                "here (a connection pooler in transaction mode?)",
                "point memory.url straight at PostgreSQL or at a pooler in session mode",
            )
    finally:
        await first.release(_PROBE_KEY)
    if not await second.claim(_PROBE_KEY):
        raise Problem(
            "a released claim stayed taken",
            "point memory.url straight at PostgreSQL or at a pooler in session mode",
        )
    await second.release(_PROBE_KEY)
    return (
        f"postgresql: {open_tables} open table(s); claims exclude each other across "
        "connections, so processes can share tables"
    )
