"""What the table cog needs from the bot that loads it (so the cog never imports the bot)."""

from __future__ import annotations

from typing import Any, Protocol

import discord

from bot.frontends.discord_bot.runtime import RuntimeFactory
from bot.settings.config import GlyphoxaConfig
from campaigns.memory.table_registry import TableRegistry

__all__ = ["TableHost"]


class TableHost(Protocol):
    """The bot (:class:`~bot.frontends.discord_bot.bot.GlyphoxaBot`) as the table cog sees it."""

    config: GlyphoxaConfig
    runtime_factory: RuntimeFactory
    table_registry: TableRegistry | None
    """Open tables shared with other processes (None: this process only)."""
    console: Any
    """The DM's console of this process (``bot.frontends.console.ConsoleHub``), or None."""

    @property
    def shard_count(self) -> int | None: ...

    def get_channel(self, id: int, /) -> Any: ...

    def get_guild(self, id: int, /) -> discord.Guild | None: ...

    async def fetch_user(self, user_id: int, /) -> discord.User: ...

    def add_listener(self, func: Any, /, name: str = ...) -> None: ...

    def transcript_channel(self, guild: discord.Guild | None) -> discord.abc.Messageable | None:
        """The configured live-transcript channel of ``guild``, if any."""
        ...

    async def default_campaign(self) -> Any:
        """The configured campaign (for /npc list and autocomplete without a session)."""
        ...

    async def recap(self, sessions: int) -> str:
        """Recap from campaign memory when no session is running."""
        ...
