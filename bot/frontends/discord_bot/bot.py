"""The discord.py bot: loads the cog, syncs commands to the configured guilds, closes cleanly."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands

from bot.frontends.discord_bot.cog import TableCog
from bot.frontends.discord_bot.proposals import ProposalsCog
from bot.frontends.discord_bot.runtime import RuntimeFactory
from bot.frontends.discord_setup.needs import bot_intents
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError
from campaigns.memory.table_registry import TableRegistry

if TYPE_CHECKING:
    from npcs.campaign import Campaign

__all__ = ["GlyphoxaBot"]

log = logging.getLogger(__name__)


class GlyphoxaBot(commands.Bot):
    """``commands.Bot`` with the table cog; slash commands only (no message content intent)."""

    def __init__(
        self,
        config: GlyphoxaConfig,
        runtime_factory: RuntimeFactory,
        *,
        table_registry: TableRegistry | None = None,
        console: Any = None,
        **options: Any,
    ) -> None:
        """``table_registry`` shares open tables with other processes (``keeper.py``);
        ``console`` (a ``bot.frontends.console.ConsoleHub``) shows this process's tables to the
        DM."""
        intents = bot_intents()  # what ``glyphoxa discord setup`` tells the DM to enable
        # Nothing the bot posts (player names, transcribed speech, NPC lines) may ping anyone:
        # a player named "@everyone" or an LLM line quoting it stays text.
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(
            command_prefix=commands.when_mentioned, intents=intents, help_command=None, **options
        )
        self.config = config
        self.runtime_factory = runtime_factory
        self.table_registry = table_registry
        self.console = console
        self._campaign: Campaign | None = None

    async def setup_hook(self) -> None:
        tables = TableCog(self)
        await self.add_cog(tables)
        await self.add_cog(ProposalsCog(tables))
        for guild_id in self.config.discord.guild_ids:
            guild = discord.Object(id=guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to guild %s", len(synced), guild_id)
        if not self.config.discord.guild_ids:
            await self.tree.sync()
            log.info("synced commands globally (may take up to an hour to appear)")

    async def close(self) -> None:
        cog = self.get_cog("TableCog")
        if isinstance(cog, TableCog):
            await cog.stop_all()
        await super().close()

    def transcript_channel(self, guild: discord.Guild | None) -> discord.abc.Messageable | None:
        channel_id = self.config.discord.transcript_channel_id
        if guild is None or channel_id is None:
            return None
        channel = guild.get_channel(channel_id)
        return channel if isinstance(channel, discord.TextChannel) else None

    async def default_campaign(self) -> Campaign:
        """The configured campaign, loaded once (for /npc list and autocomplete)."""
        if self._campaign is None:
            from npcs.campaign import load_campaign

            self._campaign = load_campaign(self.config.campaign.path)
        return self._campaign

    async def recap(self, sessions: int) -> str:
        """Recap from campaign memory when no session is running."""
        from campaigns.memory import MemoryStore

        try:
            store = await MemoryStore.open(self.config.memory.url)
        except Exception as error:
            raise GlyphoxaError(f"campaign memory is not reachable: {error}") from None
        try:
            return await store.recap(sessions)
        finally:
            await store.close()
