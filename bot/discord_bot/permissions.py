"""Who may steer the table: the configured DM role, or Manage Server when no role is set."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import discord
from discord import app_commands

__all__ = ["NotDungeonMaster", "dm_only", "dm_voice_resolver", "is_dungeon_master", "member_is_dm"]

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
        return member_is_dm(user, dm_role)
    return interaction.permissions.manage_guild


def member_is_dm(member: discord.Member | None, dm_role: str | None) -> bool:
    """The same rule for a guild member outside an interaction (a voice lane)."""
    if member is None:
        return False
    if dm_role:
        wanted = dm_role.strip().lower()
        return any(r.name.lower() == wanted or str(r.id) == wanted for r in member.roles)
    return member.guild_permissions.manage_guild


def dm_voice_resolver(guild: discord.Guild, dm_role: str | None) -> Callable[[str], bool]:
    """Speaker id (a voice lane's user id) -> is the DM, for DM voice commands.

    Decided by the member's roles at the time of each utterance, never by display name.
    """

    def resolve(speaker_id: str) -> bool:
        return speaker_id.isdigit() and member_is_dm(guild.get_member(int(speaker_id)), dm_role)

    return resolve


def dm_only() -> Callable[[T], T]:
    """Decorator for DM-only app commands; reads the role from the bot's config."""

    async def predicate(interaction: discord.Interaction) -> bool:
        config = getattr(interaction.client, "config", None)
        dm_role = config.discord.dm_role if config is not None else None
        if not is_dungeon_master(interaction, dm_role):
            raise NotDungeonMaster
        return True

    return app_commands.check(predicate)
