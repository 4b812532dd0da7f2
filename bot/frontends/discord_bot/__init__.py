"""The Discord front end: a discord.py bot whose cog runs one table session per guild."""

from __future__ import annotations

from bot.frontends.discord_bot.bot import GlyphoxaBot
from bot.frontends.discord_bot.cog import TableCog
from bot.frontends.discord_bot.runtime import RuntimeFactory, TableParts, TableRuntime

__all__ = ["GlyphoxaBot", "RuntimeFactory", "TableCog", "TableParts", "TableRuntime"]
