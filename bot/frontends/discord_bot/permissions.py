"""Who may steer the table, applied to discord.py's members and interactions.

The rule itself (the DM role, plus the server owner and Manage Server unless
``discord.dm_admins`` is false) and its wording live in :mod:`bot.frontends.discord_setup.dm_rule`;
this module reads a member's roles and permissions for it, refuses with the rule's message and gives
DM voice commands the same answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import discord
from discord import app_commands

from bot.frontends.discord_setup.dm_rule import DmRule
from bot.settings.config import DiscordConfig

__all__ = [
    "DmRule",
    "NotDungeonMaster",
    "dm_only",
    "dm_rule_of",
    "dm_voice_resolver",
    "is_dungeon_master",
    "member_is_dm",
    "refusal_for",
]

T = TypeVar("T")


class NotDungeonMaster(app_commands.CheckFailure):
    """A player used a DM command; answered privately with the rule's polite refusal."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def dm_rule_of(client: object) -> DmRule:
    """The rule of the bot's config (``client.config.discord``); the defaults without one."""
    config = getattr(client, "config", None)
    return DmRule.from_config(config.discord if config is not None else DiscordConfig())


def is_dungeon_master(interaction: discord.Interaction, rule: DmRule) -> bool:
    """True if the user may act as the DM here (Discord's resolved permissions decide Manage
    Server, so a role granting it anywhere in the server counts)."""
    user = interaction.user
    if not isinstance(user, discord.Member):
        return False
    return rule.allows(
        roles=((role.id, role.name) for role in user.roles),
        owner=_owns(user),
        manage_guild=interaction.permissions.manage_guild,
    )


def member_is_dm(member: discord.Member | None, rule: DmRule) -> bool:
    """The same rule for a guild member outside an interaction (a voice lane)."""
    if member is None:
        return False
    return rule.allows(
        roles=((role.id, role.name) for role in member.roles),
        owner=_owns(member),
        manage_guild=member.guild_permissions.manage_guild,
    )


def refusal_for(guild: discord.Guild | None, rule: DmRule) -> str:
    """The rule's refusal, naming the role by its name when it is configured by id."""
    label = rule.role
    if guild is not None and label is not None and label.isdigit():
        role = guild.get_role(int(label))
        label = role.name if role is not None else label
    return rule.refusal(label)


def dm_voice_resolver(guild: discord.Guild, rule: DmRule) -> Callable[[str], bool]:
    """Speaker id (a voice lane's user id) -> is the DM, for DM voice commands.

    Decided by the member's roles and permissions at the time of each utterance, never by
    display name.
    """

    def resolve(speaker_id: str) -> bool:
        return speaker_id.isdigit() and member_is_dm(guild.get_member(int(speaker_id)), rule)

    return resolve


def dm_only() -> Callable[[T], T]:
    """Decorator for DM-only app commands; reads the rule from the bot's config."""

    async def predicate(interaction: discord.Interaction) -> bool:
        rule = dm_rule_of(interaction.client)
        if not is_dungeon_master(interaction, rule):
            raise NotDungeonMaster(refusal_for(interaction.guild, rule))
        return True

    return app_commands.check(predicate)


def _owns(member: discord.Member) -> bool:
    return member.guild.owner_id == member.id
