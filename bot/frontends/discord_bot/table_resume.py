"""Bringing back open tables that nobody runs: after a restart, or when another process died.

The shared registry keeps a row per open table (see :mod:`bot.frontends.discord_bot.keeper`). At
startup and on every sweep, rows of this process's guilds that no live process claims are claimed
here and resumed: the bot rejoins the voice channel, the scene, mutes and overrides come back, the
DM who started the table is asked about tool approvals again and told in the channel the
session was started from that it continues. Rows too old, of a deleted voice channel, or of a
guild whose resume keeps failing are closed instead, so nothing retries forever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

import discord

from bot.frontends.discord_bot.claims import TableRunning

if TYPE_CHECKING:
    from bot.frontends.discord_bot.host import TableHost
    from bot.frontends.discord_bot.runtime import TableRuntime
    from bot.frontends.discord_bot.table_metrics import TableMetrics
    from campaigns.memory.table_registry import OpenTableRow, TableRegistry

__all__ = ["MAX_RESUME_FAILURES", "RESUME_WITHIN_S", "TableOpener", "TableResumer"]

log = logging.getLogger(__name__)

#: Rows untouched for this long are not resumed (a bot stopped for the night stays away).
RESUME_WITHIN_S = 12 * 3600.0
#: Failed resumes (voice connect errors) of one guild before its row is dropped.
MAX_RESUME_FAILURES = 3


class TableOpener(Protocol):
    """What resuming needs from the keeper of this process's tables."""

    def has_table(self, guild_id: int) -> bool:
        """The guild's table runs here, or is being opened or stopped here."""
        ...

    async def open_table(
        self,
        guild_id: int,
        channel: discord.VoiceChannel | discord.StageChannel,
        here: discord.abc.Messageable | None,
        campaign: str | None,
        *,
        dm: discord.User | discord.Member | None = None,
        resume: OpenTableRow | None = None,
    ) -> TableRuntime: ...


class TableResumer:
    """Claims and resumes the open tables of this process's guilds that nobody runs.

    Args:
        bot: the bot (its guilds and shards, and users to fetch).
        registry: the shared registry of open tables.
        metrics: counts claims that went elsewhere and resumes that failed.
        tables: the keeper that opens a claimed table.
    """

    def __init__(
        self, bot: TableHost, registry: TableRegistry, metrics: TableMetrics, tables: TableOpener
    ) -> None:
        self.bot = bot
        self.registry = registry
        self.metrics = metrics
        self.tables = tables
        self._unclaimed: set[int] = set()  # seen without an owner by the previous sweep
        self._failures: dict[int, int] = {}
        self._sweeping = asyncio.Lock()  # startup resume and periodic sweeps never overlap

    async def resume_tables(self, *, first: bool = False) -> list[int]:
        """Claim and resume open tables of this process's guilds that nobody runs; returns
        the guilds resumed. ``first`` (startup) takes over at once; later sweeps wait until a
        table was seen unclaimed twice, so a process that briefly lost its database connection
        gets its own tables back first."""
        async with self._sweeping:
            return await self._resume_unclaimed(first)

    async def _resume_unclaimed(self, first: bool) -> list[int]:
        registry = self.registry
        shard_ids = getattr(self.bot, "shard_ids", None)
        rows = await registry.rows(shard_ids, self.bot.shard_count if shard_ids else None)
        resumed = []
        unclaimed_now: set[int] = set()
        for row in rows:
            guild = self.bot.get_guild(row.guild_id)
            if guild is None or self.tables.has_table(row.guild_id):
                continue
            if time.time() - row.updated_at > RESUME_WITHIN_S:
                log.info("guild %s: open table too old to resume; closing it", row.guild_id)
                await registry.remove(row.guild_id)
                continue
            if not first and row.guild_id not in self._unclaimed:
                if not await registry.held_elsewhere(row.guild_id):
                    unclaimed_now.add(row.guild_id)
                continue
            if not await registry.claim(row.guild_id):
                self.metrics.claims.labels("elsewhere").inc()
                continue
            if await self._resume(guild, row):
                resumed.append(row.guild_id)
        self._unclaimed = unclaimed_now
        return resumed

    async def _resume(self, guild: discord.Guild, row: OpenTableRow) -> bool:
        channel = guild.get_channel(row.voice_channel_id)
        here = guild.get_channel(row.text_channel_id) if row.text_channel_id else None
        alerts = here if isinstance(here, discord.abc.Messageable) else None
        if not isinstance(channel, discord.VoiceChannel | discord.StageChannel):
            await self.registry.remove(row.guild_id)
            await self.registry.release(row.guild_id)
            await _tell(alerts, "The session's voice channel is gone; start a new session.")
            return False
        dm = await self._dm_of(guild, row.state.get("dm_user_id"))
        try:
            await self.tables.open_table(guild.id, channel, alerts, row.campaign, dm=dm, resume=row)
        except TableRunning:
            return False  # a /session start here got there first
        except Exception as error:
            failures = self._failures.get(guild.id, 0) + 1
            self._failures[guild.id] = failures
            self.metrics.claims.labels("resume_failed").inc()
            await self.registry.release(guild.id)
            log.error("resuming the table in guild %s failed (%d): %s", guild.id, failures, error)
            if failures >= MAX_RESUME_FAILURES:
                await self.registry.remove(guild.id)
                await _tell(alerts, f"Could not resume the session ({error}); start it again.")
            return False
        self._failures.pop(guild.id, None)
        log.info("resumed the table in guild %s (%s)", guild.id, channel.name)
        await _tell(alerts, f"Glyphoxa restarted; the session continues in {channel.mention}.")
        return True

    async def _dm_of(
        self, guild: discord.Guild, user_id: Any
    ) -> discord.User | discord.Member | None:
        """The DM who started a resumed table, to ask about tool approvals again."""
        if not isinstance(user_id, int):
            return None
        member = guild.get_member(user_id)
        if member is not None:
            return member
        try:
            return await self.bot.fetch_user(user_id)
        except discord.HTTPException as error:
            log.warning("guild %s: the DM %s is unknown now (%s)", guild.id, user_id, error)
            return None


async def _tell(channel: Any, text: str) -> None:
    if channel is None:
        return
    try:
        await channel.send(text)
    except discord.HTTPException as error:
        log.warning("could not tell the DM %r: %s", text, error)
