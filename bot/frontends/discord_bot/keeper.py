"""The tables this process runs, kept in the shared registry so another process can resume them.

``/session start`` claims the guild (one process only, even when two hold the same shard),
records the open table and starts it; every session event marks it dirty and a saver writes
its state (scene, mutes, overrides) at most every half second; ``/session stop`` removes the
row. When this process starts (``on_ready``) and every few seconds after, a sweep proves this
process's claims alive and has open tables of its guilds that nobody runs resumed
(:mod:`bot.frontends.discord_bot.table_resume`). Without a registry (tests) tables live in this
process only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

import discord

from bot.frontends.discord_bot.approval import DiscordApprover
from bot.frontends.discord_bot.claims import TableElsewhere, TableRunning
from bot.frontends.discord_bot.permissions import dm_rule_of, dm_voice_resolver
from bot.frontends.discord_bot.runtime import TableRuntime
from bot.frontends.discord_bot.table_metrics import TableMetrics
from bot.frontends.discord_bot.table_resume import TableResumer
from bot.table.session import snapshot
from bot.telemetry.metrics import METRICS
from campaigns.memory.table_registry import OpenTableRow, TableRegistry

if TYPE_CHECKING:
    from bot.frontends.discord_bot.host import TableHost

__all__ = ["TableKeeper"]

log = logging.getLogger(__name__)

#: How often claims are proven alive and unclaimed tables of our guilds are looked for.
SWEEP_INTERVAL_S = 5.0
#: Coalescing window for state writes (a busy table writes at most this often).
SAVE_INTERVAL_S = 0.5
#: How often running tables refresh ``updated_at`` (keeps them inside ``RESUME_WITHIN_S``).
TOUCH_INTERVAL_S = 60.0


class TableKeeper:
    """Owns this process's :class:`TableRuntime` per guild and their rows in the registry."""

    def __init__(self, bot: TableHost) -> None:
        self.bot = bot
        self.metrics = TableMetrics()
        self._detach_metrics = METRICS.attach(self.metrics.registry)
        self.registry: TableRegistry | None = bot.table_registry
        self.tables: dict[int, TableRuntime] = {}
        self._busy: set[int] = set()  # guilds whose table is being opened or stopped
        self._dirty: set[int] = set()
        self._wake = asyncio.Event()
        self._dms: dict[int, int] = {}  # guild -> the DM who started its table (user id)
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = False
        self._forgetting: set[asyncio.Task[None]] = set()  # rows of tables that ended
        self._resumer: TableResumer | None = None
        if self.registry is not None:
            self._resumer = TableResumer(bot, self.registry, self.metrics, self)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Begin saving state and sweeping for tables to resume (needs a registry)."""
        if self.registry is None or self._tasks:
            return
        self.bot.add_listener(self._on_ready, "on_ready")
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._saver(), name="tables:saver"),
            loop.create_task(self._sweeper(), name="tables:sweeper"),
        ]

    async def close(self) -> None:
        """Stop every table here (their rows stay: another process or a restart resumes them)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._forgetting:
            await asyncio.gather(*self._forgetting, return_exceptions=True)
        for guild_id in list(self.tables):
            await self.stop_table(guild_id, close=False)
        self._detach_metrics()

    # -- opening and stopping -----------------------------------------------------------------

    async def claim(self, guild_id: int) -> None:
        """Take this guild for ``/session start``; raises when it is not ours to run."""
        if self.has_table(guild_id):
            raise TableRunning
        if self.registry is not None and not await self.registry.claim(guild_id):
            self.metrics.claims.labels("elsewhere").inc()
            raise TableElsewhere(f"guild {guild_id}: its table runs in another process")

    async def open_table(
        self,
        guild_id: int,
        channel: discord.VoiceChannel | discord.StageChannel,
        here: discord.abc.Messageable | None,
        campaign: str | None,
        *,
        dm: discord.User | discord.Member | None = None,
        resume: OpenTableRow | None = None,
    ) -> TableRuntime:
        """Build, restore (when resuming) and start a claimed guild's table; record it.
        ``dm`` (who started it) is asked in private about tool calls that need approval; a
        resumed table asks the same DM again."""
        if self.has_table(guild_id):
            raise TableRunning
        self._busy.add(guild_id)
        try:
            state = None
            if resume is not None:
                state = snapshot.TableState.from_json(resume.state, resume.memory_session_id)
            if dm is not None:
                self._dms[guild_id] = dm.id
            table = await self._build(channel, here, campaign, state, dm)
            try:
                await self._record(guild_id, table, channel.id, here, campaign)
            except BaseException:
                await table.stop()  # a table nobody could resume must not run
                raise
            self.tables[guild_id] = table
            table.session.listeners.append(lambda _event: self._mark(guild_id))
            self.metrics.claims.labels("resumed" if resume else "started").inc()
            self.metrics.running.set(len(self.tables))
            return table
        except BaseException:
            if self.registry is not None and resume is None:
                await self.registry.release(guild_id)
            raise
        finally:
            self._busy.discard(guild_id)

    async def _record(
        self,
        guild_id: int,
        table: TableRuntime,
        voice_channel_id: int,
        here: discord.abc.Messageable | None,
        campaign: str | None,
    ) -> None:
        if self.registry is None:
            return
        state = snapshot.capture(table.session)
        await self.registry.record(
            OpenTableRow(
                guild_id=guild_id,
                voice_channel_id=voice_channel_id,
                text_channel_id=getattr(here, "id", None),
                campaign=campaign,
                memory_session_id=state.memory_session_id,
                state={**state.as_json(), "dm_user_id": self._dms.get(guild_id)},
            )
        )

    async def _build(
        self,
        channel: discord.VoiceChannel | discord.StageChannel,
        here: discord.abc.Messageable | None,
        campaign: str | None,
        state: snapshot.TableState | None,
        dm: discord.User | discord.Member | None,
    ) -> TableRuntime:
        factory = self.bot.runtime_factory
        memory_session = state.memory_session_id if state is not None else None
        if memory_session:
            parts = await factory(campaign, memory_session_id=memory_session)
        else:
            parts = await factory(campaign)
        # DM voice commands: the DM's own voice lane steers the table (the slash commands' rule).
        parts.session.voice.dm_resolver = dm_voice_resolver(channel.guild, dm_rule_of(self.bot))
        if parts.tools is not None and dm is not None:  # approvals go to this DM in private
            approver = DiscordApprover(dm)
            parts.tools.approvals.configure(approver=approver)
            parts.closers.append(approver.aclose)
        settings = self.bot.config.discord
        guild_id = channel.guild.id
        table = TableRuntime(
            parts,
            self.bot.transcript_channel(channel.guild),
            alerts=here,
            on_ended=lambda ended: self._ended(guild_id, ended),
            rejoin_attempts=settings.rejoin_attempts,
            deaf_after_s=settings.deaf_after_s,
            stall_after_s=settings.stall_after_s,
            console=getattr(self.bot, "console", None),
            end=lambda: self.stop_table(guild_id, close=True),
            idle_close_s=self.bot.config.session.idle_close_s,
        )
        if state is not None:
            for problem in snapshot.restore(table.session, state):
                log.warning("resuming guild %s: %s", channel.guild.id, problem)
        try:
            await table.start(channel)
        except BaseException:
            await table.stop()
            raise
        return table

    async def stop_table(self, guild_id: int, *, close: bool) -> None:
        """Stop the guild's table here. ``close`` (``/session stop``) also removes its row;
        otherwise (shutdown, lost claim) the row stays for whoever resumes it."""
        table = self.tables.pop(guild_id, None)
        self.metrics.running.set(len(self.tables))
        self._dirty.discard(guild_id)
        registry = self.registry
        if table is not None and registry is not None and not close:
            await self._save(guild_id, table)
        if table is not None:
            await table.stop()
        if registry is None:
            return
        try:
            if close:
                await registry.remove(guild_id)
        finally:
            await registry.release(guild_id)

    def _ended(self, guild_id: int, table: TableRuntime) -> None:
        """A table that ended on its own (kicked, channel deleted, voice lost for good) is
        gone: the DM was told, so nobody resumes it; the DM may start a new one at once."""
        if self.tables.get(guild_id) is not table:
            return
        del self.tables[guild_id]
        self.metrics.running.set(len(self.tables))
        self._dirty.discard(guild_id)
        if self.registry is not None:
            task = asyncio.get_running_loop().create_task(
                self._forget(guild_id), name=f"tables:forget:{guild_id}"
            )
            self._forgetting.add(task)
            task.add_done_callback(self._forgetting.discard)

    async def _forget(self, guild_id: int) -> None:
        registry = self.registry
        assert registry is not None
        try:
            await registry.remove(guild_id)
        except Exception as error:  # the sweeper retries a row it can still see
            log.warning("guild %s: could not remove its ended table: %s", guild_id, error)
        finally:
            await registry.release(guild_id)

    def has_table(self, guild_id: int) -> bool:
        """The guild's table runs here, or is being opened or stopped here."""
        return guild_id in self.tables or guild_id in self._busy

    def starting(self, guild_id: int) -> bool:
        """The guild's table is being opened (or resumed) here right now."""
        return guild_id in self._busy

    async def held_elsewhere(self, guild_id: int) -> bool:
        """True when another process runs this guild's table (so this one must stay silent)."""
        if guild_id in self.tables or self.registry is None:
            return False
        elsewhere = await self.registry.held_elsewhere(guild_id)
        if elsewhere:
            self.metrics.claims.labels("elsewhere").inc()
        return elsewhere

    # -- resuming -----------------------------------------------------------------------------

    async def _on_ready(self) -> None:
        self._ready = True
        await self.resume_tables(first=True)

    async def resume_tables(self, *, first: bool = False) -> list[int]:
        """Claim and resume open tables of this process's guilds that nobody runs; returns
        the guilds resumed. ``first`` (startup) takes over at once; later sweeps wait until a
        table was seen unclaimed twice, so a process that briefly lost its database connection
        gets its own tables back first (:mod:`bot.frontends.discord_bot.table_resume`)."""
        if self._resumer is None:
            return []
        return await self._resumer.resume_tables(first=first)

    # -- background ---------------------------------------------------------------------------

    def _mark(self, guild_id: int) -> None:
        self._dirty.add(guild_id)
        self._wake.set()

    async def _saver(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(SAVE_INTERVAL_S)  # coalesce a burst of events into one write
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            for guild_id in dirty:
                table = self.tables.get(guild_id)
                if table is not None:
                    await self._save(guild_id, table)

    async def _save(self, guild_id: int, table: TableRuntime) -> None:
        assert self.registry is not None
        state = snapshot.capture(table.session)
        try:
            stored = {**state.as_json(), "dm_user_id": self._dms.get(guild_id)}
            await self.registry.save_state(guild_id, stored, state.memory_session_id)
        except Exception as error:  # the table plays on; the next change tries again
            log.warning("could not save the table state of guild %s: %s", guild_id, error)
            self._dirty.add(guild_id)

    async def _sweeper(self) -> None:
        assert self.registry is not None
        touched = time.monotonic()
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            try:
                for guild_id in await self.registry.check_claims():
                    log.warning("guild %s: another process took the table over", guild_id)
                    self.metrics.claims.labels("lost").inc()
                    table = self.tables.pop(guild_id, None)
                    self.metrics.running.set(len(self.tables))
                    if table is not None:
                        await table.stop()
                if time.monotonic() - touched > TOUCH_INTERVAL_S:
                    touched = time.monotonic()
                    self._dirty.update(self.tables)
                    self._wake.set()
                if self._ready:
                    await self.resume_tables()
            except Exception as error:  # database down: tables play on, try again later
                log.warning("table registry sweep failed: %s", error)
