"""``/iam`` and ``/character``: players bind themselves to their characters, the DM binds anyone.

A part of ``TableCog`` (its commands join the cog's): ``/iam Arin`` makes the NPCs, the
transcript and the campaign memory call the player Arin from their next line on, and at the
campaign's next sessions. The DM may name another player (``/iam Arin player:@dusk_rider`` or
``/character bind``); ``/character unbind`` goes back to the display name (or to the
``campaign.yaml`` entry) and ``/character list`` shows who plays whom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.frontends.discord_bot.permissions import (
    NotDungeonMaster,
    dm_only,
    dm_rule_of,
    is_dungeon_master,
    refusal_for,
)
from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:
    from bot.frontends.discord_bot.host import TableHost
    from bot.frontends.discord_bot.runtime import TableRuntime
    from bot.table.session.characters import Binding

__all__ = ["CharacterCommands"]

_NONE = discord.AllowedMentions.none()


class CharacterCommands(commands.Cog):
    """The character commands, a base of ``TableCog`` (which provides ``bot`` and ``_table``)."""

    bot: TableHost
    character_group = app_commands.Group(name="character", description="Who plays which character")

    if TYPE_CHECKING:

        def _table(self, interaction: discord.Interaction) -> TableRuntime: ...

    @app_commands.command(name="iam")
    @app_commands.describe(
        character="your character's name, e.g. Arin",
        player="(DM only) bind this player instead of yourself",
    )
    async def iam(
        self,
        interaction: discord.Interaction,
        character: app_commands.Range[str, 1, 64],
        player: discord.Member | None = None,
    ) -> None:
        """Play a character: the NPCs, the transcript and memory call you by its name."""
        await self._bind(interaction, character, player)

    @character_group.command(name="bind")
    @app_commands.describe(player="the player", character="their character's name")
    @dm_only()
    async def character_bind(
        self,
        interaction: discord.Interaction,
        player: discord.Member,
        character: app_commands.Range[str, 1, 64],
    ) -> None:
        """Bind a player to their character (DM only)."""
        await self._bind(interaction, character, player)

    @character_group.command(name="unbind")
    @app_commands.describe(player="(DM only) unbind this player instead of yourself")
    async def character_unbind(
        self, interaction: discord.Interaction, player: discord.Member | None = None
    ) -> None:
        """Stop playing your character: you are called by your display name again."""
        target = self._target(interaction, player)
        table = self._table(interaction)
        now = await table.session.unbind_character(target.id)
        who = _name(target)
        after = f"plays **{now.character}** (campaign.yaml)" if now else "goes by their own name"
        await interaction.response.send_message(f"{who} {after} again.", allowed_mentions=_NONE)

    @character_group.command(name="list")
    async def character_list(self, interaction: discord.Interaction) -> None:
        """Who plays which character at this table."""
        table = self._table(interaction)
        session = table.session
        lines = [_listed(binding) for binding in session.characters.bindings()]
        bound = {binding.user_id for binding in session.characters.bindings()}
        lines += [
            f"- {discord.utils.escape_markdown(speaker.display_name)}: no character (called by "
            "their display name)"
            for speaker in session.lanes
            if speaker.id not in bound and not session.voice.is_dm(speaker)
        ]
        text = "\n".join(lines) or "No characters yet: players bind theirs with `/iam`."
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=_NONE)

    async def _bind(
        self, interaction: discord.Interaction, character: str, player: discord.Member | None
    ) -> None:
        target = self._target(interaction, player)
        table = self._table(interaction)
        by = interaction.user.display_name
        bound = await table.session.bind_character(target.id, character, bound_by=by)
        who = _name(target)
        kept = (
            ""
            if table.session.characters.persistent
            else " (for this session: the table has no campaign memory)"
        )
        await interaction.response.send_message(
            f"{who} plays **{discord.utils.escape_markdown(bound.character)}**{kept}.",
            allowed_mentions=_NONE,
        )

    def _target(
        self, interaction: discord.Interaction, player: discord.Member | None
    ) -> discord.User | discord.Member:
        """The player a command is about: the caller, or (DM only) the player named."""
        if player is None or player.id == interaction.user.id:
            return interaction.user
        rule = dm_rule_of(self.bot)
        if not is_dungeon_master(interaction, rule):
            raise NotDungeonMaster(
                refusal_for(interaction.guild, rule)
                + " Players bind themselves: `/iam` without `player`."
            )
        if player.bot:
            raise GlyphoxaError(f"{player.display_name} is a bot, not a player.")
        return player


def _name(user: discord.User | discord.Member) -> str:
    return discord.utils.escape_markdown(user.display_name)


def _listed(binding: Binding) -> str:
    """One line of ``/character list``; the player as a mention, which Discord shows as their
    name (the reply pings nobody) whether or not the bot has the member cached."""
    who = f"<@{binding.user_id}>" if binding.user_id.isdigit() else binding.user_id
    how = (
        "campaign.yaml"
        if binding.source == "campaign.yaml"
        else f"bound by {binding.bound_by}"
        if binding.bound_by
        else "bound at the table"
    )
    return f"- **{discord.utils.escape_markdown(binding.character)}**: {who} ({how})"
