"""``/proposals``: the DM reviews the facts NPCs proposed, from Discord (DM only, private).

``list`` shows what waits; ``approve``, ``edit`` (reword, then approve) and ``reject`` decide one
proposal by its number, with the waiting ones offered as choices. The store is the running
table's campaign memory when the guild has a table here, else the configured ``memory.url``; a
fact approved while a table runs reaches its NPCs at the next mention of the entity.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.frontends.discord_bot.messages import command_error_text, reply_privately
from bot.frontends.discord_bot.permissions import dm_only, dm_rule_of, is_dungeon_master
from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:
    from bot.frontends.discord_bot.cog import TableCog
    from campaigns.memory import MemoryStore

__all__ = ["ProposalsCog", "describe_proposal"]

log = logging.getLogger(__name__)

#: Characters of a proposal shown as an autocomplete choice (Discord allows 100).
_CHOICE_CHARS = 100


def describe_proposal(fact: dict[str, Any]) -> str:
    """One proposal for the DM: number, who, about what, the fact (and the NPC's own words
    when the DM edited it)."""
    about = ""
    if fact["entity_id"]:
        about = f" about **{fact.get('entity_name') or fact['entity_id']}**"
    state = "" if fact["status"] == "pending" else f" [{fact['status']}]"
    line = f"**#{fact['id']}**{state} {fact['npc']}{about}: {fact['text']}"
    if fact.get("original_text"):
        line += f" *(edited; {fact['npc']} proposed: {fact['original_text']})*"
    return line


class ProposalsCog(commands.Cog):
    """The review queue of NPC-proposed facts, next to the table's own commands."""

    proposals = app_commands.Group(
        name="proposals", description="Review the facts NPCs proposed (DM only)"
    )

    def __init__(self, tables: TableCog) -> None:
        self._tables = tables

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """The table cog's rule: the process running the guild's table answers."""
        return await self._tables.interaction_check(interaction)

    @contextlib.asynccontextmanager
    async def _memory(self, interaction: discord.Interaction) -> AsyncIterator[MemoryStore]:
        table = self._tables.tables.get(interaction.guild_id or 0)
        memory = table.parts.memory if table is not None else None
        if memory is not None:
            yield memory
            return
        from campaigns.memory import MemoryStore

        try:
            store = await MemoryStore.open(self._tables.bot.config.memory.url)
        except GlyphoxaError as error:
            raise GlyphoxaError(f"Campaign memory is not reachable: {error}") from None
        async with store:
            yield store

    def _fact_known(self, interaction: discord.Interaction) -> None:
        """A running table looks entities up again, so its NPCs see the approved fact."""
        table = self._tables.tables.get(interaction.guild_id or 0)
        if table is not None:
            table.session.entities.forget()

    @proposals.command(name="list")
    @dm_only()
    async def list_proposals(self, interaction: discord.Interaction) -> None:
        """The proposals waiting for your review."""
        async with self._memory(interaction) as store:
            waiting = await store.list_facts("pending")
        if not waiting:
            await _reply(interaction, "No proposals are waiting.")
            return
        lines = [describe_proposal(fact) for fact in waiting]
        lines.append("Decide with `/proposals approve`, `/proposals edit` or `/proposals reject`.")
        await _reply(interaction, "\n".join(lines))

    @proposals.command(name="approve")
    @app_commands.rename(number="id")
    @app_commands.describe(number="the proposal's number")
    @dm_only()
    async def approve(self, interaction: discord.Interaction, number: str) -> None:
        """Approve a proposal as the NPC worded it: it joins the campaign's facts."""
        async with self._memory(interaction) as store:
            fact = await store.approve_fact(number, by=_who(interaction))
        self._fact_known(interaction)
        await _reply(interaction, f"Approved: {describe_proposal(fact)}")

    @proposals.command(name="edit")
    @app_commands.rename(number="id")
    @app_commands.describe(number="the proposal's number", text="the fact as it should be kept")
    @dm_only()
    async def edit(self, interaction: discord.Interaction, number: str, text: str) -> None:
        """Reword a proposal and approve it."""
        async with self._memory(interaction) as store:
            fact = await store.approve_fact(number, text=text, by=_who(interaction))
        self._fact_known(interaction)
        await _reply(interaction, f"Edited and approved: {describe_proposal(fact)}")

    @proposals.command(name="reject")
    @app_commands.rename(number="id")
    @app_commands.describe(number="the proposal's number")
    @dm_only()
    async def reject(self, interaction: discord.Interaction, number: str) -> None:
        """Reject a proposal: no NPC will ever see it."""
        async with self._memory(interaction) as store:
            fact = await store.reject_fact(number, by=_who(interaction))
        await _reply(interaction, f"Rejected: {describe_proposal(fact)}")

    @approve.autocomplete("number")
    @edit.autocomplete("number")
    @reject.autocomplete("number")
    async def _waiting_ids(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """The waiting proposals as choices; players (who cannot decide) learn nothing."""
        if not is_dungeon_master(interaction, dm_rule_of(self._tables.bot)):
            return []
        try:
            async with self._memory(interaction) as store:
                waiting = await store.list_facts("pending")
        except GlyphoxaError:
            return []
        wanted = current.strip().lstrip("#").lower()
        choices = []
        for fact in waiting:
            label = f"#{fact['id']} {fact['npc']}: {fact['text']}"
            if wanted in label.lower():
                choices.append(app_commands.Choice(name=_cut(label), value=str(fact["id"])))
        return choices[:25]

    async def cog_app_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        text = command_error_text(interaction, error)
        if text is not None:
            await _reply(interaction, text)


def _who(interaction: discord.Interaction) -> str:
    return f"{interaction.user.display_name} (Discord)"


def _cut(text: str) -> str:
    return text if len(text) <= _CHOICE_CHARS else text[: _CHOICE_CHARS - 3] + "..."


async def _reply(interaction: discord.Interaction, text: str) -> None:
    """A private answer; a long queue is shortened and attached whole."""
    await reply_privately(interaction, text, filename="proposals.txt")
