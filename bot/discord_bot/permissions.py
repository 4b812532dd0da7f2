"""Who may steer the table: the configured DM role, or Manage Server when no role is set."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import discord
from discord import app_commands

__all__ = ["NotDungeonMaster", "dm_only", "is_dungeon_master"]

T = TypeVar("T")

REFUSAL = "Sorry, only the Dungeon Master can do that. Ask your DM, and keep playing!"


class NotDungeonMaster(app_commands.CheckFailure):
    """A player used a DM command; answered with a polite, private refusal."""

    def __init__(self) -> None:
        super().__init__(REFUSAL)


def is_dungeon_master(interaction: discord.Interaction, dm_role: str | None) -> bool:
    """True if the user has ``dm_role`` (name or id) or, without one, Manage Server."""
    user = interaction.user
    if not isinstance(user, discord.Member):
        return False
    if dm_role:
        wanted = dm_role.strip().lower()
        return any(r.name.lower() == wanted or str(r.id) == wanted for r in user.roles)
    return interaction.permissions.manage_guild


def dm_only() -> Callable[[T], T]:
    """Decorator for DM-only app commands; reads the role from the bot's config."""

    async def predicate(interaction: discord.Interaction) -> bool:
        config = getattr(interaction.client, "config", None)
        dm_role = config.discord.dm_role if config is not None else None
        if not is_dungeon_master(interaction, dm_role):
            raise NotDungeonMaster
        return True

    return app_commands.check(predicate)
