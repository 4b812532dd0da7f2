"""Character bindings of a campaign: which player plays which character, across sessions.

Mixed into ``MemoryStore``; relies on its ``_read``/``_write`` helpers. A binding is one row per
(campaign, player); binding again replaces it, so a player has at most one character.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, insert, select

from campaigns.memory.models import CharacterBinding, table_of

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["CharactersMixin", "StoredBinding"]

BINDINGS = table_of(CharacterBinding)


@dataclass(frozen=True, slots=True)
class StoredBinding:
    """One stored binding: the player's id, their character and who bound them."""

    user_id: str
    character: str
    bound_by: str | None
    updated_at: float


class CharactersMixin:
    if TYPE_CHECKING:

        def _read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...
        def _write(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    async def bind_character(
        self, campaign: str, user_id: str, character: str, *, bound_by: str | None = None
    ) -> None:
        """Bind ``user_id`` to ``character`` in ``campaign`` (replacing their binding)."""
        async with self._write() as conn:
            await conn.execute(
                delete(BINDINGS).where(
                    BINDINGS.c.campaign == campaign, BINDINGS.c.user_id == user_id
                )
            )
            await conn.execute(
                insert(BINDINGS).values(
                    campaign=campaign,
                    user_id=user_id,
                    character=character,
                    bound_by=bound_by,
                    updated_at=time.time(),
                )
            )

    async def unbind_character(self, campaign: str, user_id: str) -> bool:
        """Forget ``user_id``'s binding in ``campaign``; False when there was none."""
        async with self._write() as conn:
            result = await conn.execute(
                delete(BINDINGS).where(
                    BINDINGS.c.campaign == campaign, BINDINGS.c.user_id == user_id
                )
            )
        return bool(result.rowcount)

    async def character_bindings(self, campaign: str) -> list[StoredBinding]:
        """Every binding of ``campaign``, oldest first."""
        query = (
            select(BINDINGS.c.user_id, BINDINGS.c.character, BINDINGS.c.bound_by,
                   BINDINGS.c.updated_at)
            .where(BINDINGS.c.campaign == campaign)
            .order_by(BINDINGS.c.updated_at, BINDINGS.c.id)
        )  # fmt: skip
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return [StoredBinding(*row) for row in rows]
