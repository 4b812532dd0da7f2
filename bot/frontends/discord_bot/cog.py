"""Slash commands for the table. Thin: each command checks, calls the session, replies.

DM-only commands carry :func:`~bot.frontends.discord_bot.permissions.dm_only`; ``/roll`` is for
anyone, and so are ``/iam`` and ``/character`` (``bot.frontends.discord_bot.characters``).
Every error becomes a private (ephemeral) reply; a player using a DM command is refused
politely and nothing changes.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.frontends.discord_bot.characters import CharacterCommands
from bot.frontends.discord_bot.claims import TableElsewhere
from bot.frontends.discord_bot.host import TableHost
from bot.frontends.discord_bot.keeper import TableKeeper
from bot.frontends.discord_bot.messages import (
    MESSAGE_LIMIT,
    command_error_text,
    fit_message,
    reply_privately,
)
from bot.frontends.discord_bot.permissions import dm_only, dm_rule_of, is_dungeon_master
from bot.frontends.discord_bot.runtime import TableRuntime
from bot.frontends.discord_setup.needs import VOICE_PERMISSIONS, lacking
from bot.table.session.controls import MAX_DIRECTION_CHARS, MAX_DIRECTION_TURNS, MAX_MOOD_CHARS
from bot.table.session.spend import cost_lines
from campaigns.basics import GlyphoxaError, Tier
from tools.builtin.dice_engine import roll_expression

__all__ = ["TableCog"]

log = logging.getLogger(__name__)

TierChoice = Literal["fast", "standard", "deep", "auto"]


class TableCog(CharacterCommands):
    """Runs one table session per guild and lets the DM steer it."""

    session_group = app_commands.Group(name="session", description="Start, stop or inspect")
    npc_group = app_commands.Group(name="npc", description="Steer the NPCs (DM only)")

    def __init__(self, bot: TableHost) -> None:
        self.bot = bot
        self.keeper = TableKeeper(bot)
        """Claims, shared state and resume of this process's tables (``keeper.py``)."""
        self.tables: dict[int, TableRuntime] = self.keeper.tables

    async def cog_load(self) -> None:
        await self.keeper.start()

    async def cog_unload(self) -> None:
        await self.stop_all()

    async def stop_all(self) -> None:
        await self.keeper.close()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Two processes holding one shard both get every interaction: the one that does not
        run the guild's table stays silent and lets the other answer."""
        if await self.keeper.held_elsewhere(interaction.guild_id or 0):
            raise TableElsewhere("the table runs in another process")
        return True

    @commands.Cog.listener()
    async def on_voice_state_update(
        self, member: discord.Member, before: discord.VoiceState, after: discord.VoiceState
    ) -> None:
        """Someone joined, left or moved in voice: the guild's table may start or cancel its
        idle countdown (``session.idle_close_s``)."""
        table = self.tables.get(member.guild.id)
        if table is not None and before.channel != after.channel:
            table.people_changed()

    def _table(self, interaction: discord.Interaction) -> TableRuntime:
        table = self.tables.get(interaction.guild_id or 0)
        if table is None and self.keeper.starting(interaction.guild_id or 0):
            raise GlyphoxaError("The session is starting; try again in a moment.")
        if table is None:
            raise GlyphoxaError("No session is running here. Start one with `/session start`.")
        return table

    # -- /session ----------------------------------------------------------------------------

    @session_group.command(name="start")
    @app_commands.describe(campaign="campaign folder (default: the configured one)")
    @dm_only()
    async def session_start(
        self, interaction: discord.Interaction, campaign: str | None = None
    ) -> None:
        """Join your voice channel and start the table session."""
        voice = getattr(interaction.user, "voice", None)
        channel = voice.channel if voice is not None else None
        if channel is None:
            raise GlyphoxaError("Join a voice channel first, then run `/session start` again.")
        _check_can_join(channel)
        guild_id = interaction.guild_id or 0
        await self.keeper.claim(guild_id)  # one process per table, even on a shared shard
        await interaction.response.defer(ephemeral=True, thinking=True)
        here = interaction.channel or self.bot.get_channel(interaction.channel_id or 0)
        alerts = here if isinstance(here, discord.abc.Messageable) else None
        table = await self.keeper.open_table(
            guild_id, channel, alerts, campaign, dm=interaction.user
        )
        settings = self.bot.config.discord
        npcs = ", ".join(sorted(table.session.campaign.npcs)) or "none"
        await interaction.followup.send(f"Session started in {channel.mention}. NPCs: {npcs}.")
        if settings.transcription_notice and alerts is not None:
            await alerts.send("This voice session is transcribed so the NPCs can answer you.")

    @session_group.command(name="stop")
    @dm_only()
    async def session_stop(self, interaction: discord.Interaction) -> None:
        """Leave voice and end the session (the transcript is kept)."""
        self._table(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self.keeper.stop_table(interaction.guild_id or 0, close=True)
        await interaction.followup.send("Session stopped.")

    @session_group.command(name="status")
    @dm_only()
    async def session_status(self, interaction: discord.Interaction) -> None:
        """NPCs, tier overrides, recent latency and receive health."""
        table = self._table(interaction)
        status = table.session.status()
        lines = [f"Campaign **{status.campaign}**, {status.turns} turns"]
        for name, npc in status.npcs.items():
            flags = [f"budget {npc.budget_tier}"]
            flags += [badge.text for badge in npc.badges]  # the DM's orders, never their words
            if npc.speaking:
                flags.append("speaking")
            if npc.last_tier:
                flags.append(f"last turn {npc.last_tier} ({npc.last_tier_reason})")
            lines.append(f"- {name}: {', '.join(flags)}")
        recent = status.recent_voice_to_voice_ms
        if recent:
            lines.append(f"Voice-to-voice (last {len(recent)}): {_ms_summary(recent)}")
        if table.voice is not None:
            counters = table.voice.receiver.snapshot()
            lines.append(
                f"Receive: {counters.received} packets, {counters.decoded} decoded, "
                f"{sum(counters.dropped.values())} dropped"
            )
        await reply_privately(interaction, "\n".join(lines))

    @session_group.command(name="cost")
    @dm_only()
    async def session_cost(self, interaction: discord.Interaction) -> None:
        """The night's cost so far, per provider and per NPC, and the spending limits."""
        meter = self._table(interaction).session.spend
        if meter is None:
            raise GlyphoxaError("This session does not count its cost.")
        await reply_privately(interaction, "\n".join(cost_lines(meter.summary())))

    # -- /tier, /npc ---------------------------------------------------------------------------

    @app_commands.command(name="tier")
    @app_commands.describe(
        level="fast, standard, deep, or auto to clear the override",
        npc="only this NPC (default: all)",
        duration="minutes the override lasts (default: until changed)",
    )
    @dm_only()
    async def tier(
        self,
        interaction: discord.Interaction,
        level: TierChoice,
        npc: str | None = None,
        duration: app_commands.Range[float, 0.1, 600.0] | None = None,
    ) -> None:
        """Force how long NPCs may think (which tools they may use)."""
        table = self._table(interaction)
        value = None if level == "auto" else Tier[level.upper()]
        table.session.controls.set_tier_override(
            value, npc=npc, duration_s=duration and duration * 60
        )
        scope = npc or "all NPCs"
        until = f" for {duration:g} min" if duration else ""
        await reply_privately(interaction, f"Tier {level} for {scope}{until}.")

    @npc_group.command(name="list")
    @dm_only()
    async def npc_list(self, interaction: discord.Interaction) -> None:
        """List the campaign's NPCs."""
        table = self.tables.get(interaction.guild_id or 0)
        campaign = table.session.campaign if table else await self.bot.default_campaign()
        lines = [
            f"- **{npc.name}** ({npc.engine.value}, budget {npc.budget_tier.label})"
            + (" (muted)" if table and table.session.controls.is_muted(npc.name) else "")
            for npc in campaign.npcs.values()
        ]
        await reply_privately(interaction, "\n".join(lines) or "This campaign has no NPCs.")

    @npc_group.command(name="mute")
    @app_commands.describe(name="NPC name, or all")
    @dm_only()
    async def npc_mute(self, interaction: discord.Interaction, name: str) -> None:
        """Silence an NPC (or all): cuts what it is saying."""
        self._table(interaction).session.controls.mute(None if name.lower() == "all" else name)
        await reply_privately(interaction, f"Muted {name}.")

    @npc_group.command(name="unmute")
    @app_commands.describe(name="NPC name, or all")
    @dm_only()
    async def npc_unmute(self, interaction: discord.Interaction, name: str) -> None:
        """Let an NPC (or all) speak again."""
        self._table(interaction).session.controls.unmute(None if name.lower() == "all" else name)
        await reply_privately(interaction, f"Unmuted {name}.")

    @npc_group.command(name="say")
    @app_commands.describe(name="NPC name", text="what the NPC says, verbatim")
    @dm_only()
    async def npc_say(self, interaction: discord.Interaction, name: str, text: str) -> None:
        """Speak a line in an NPC's voice."""
        self._table(interaction).session.controls.say(name, text)
        await reply_privately(interaction, f"{name} will say it.")

    @npc_group.command(name="mood")
    @app_commands.describe(
        name="NPC name, or all", mood='e.g. grumpy, or "suspicious of the elves"; "clear" drops it'
    )
    @dm_only()
    async def npc_mood(
        self,
        interaction: discord.Interaction,
        name: str,
        mood: app_commands.Range[str, 1, MAX_MOOD_CHARS],
    ) -> None:
        """Set an NPC's mood: every answer it gives shows it, until you clear it."""
        session = self._table(interaction).session
        found = session.campaign.find_npc(name)
        who = "Every NPC" if name.lower() == "all" else found.name if found else name
        now = session.controls.set_mood(name, mood)
        if now is None:
            await reply_privately(interaction, f"{who}: back to their usual self.")
            return
        await reply_privately(interaction, f"{who}: {now}, until `/npc mood {name} clear`.")

    @app_commands.command(name="direct")
    @app_commands.describe(
        npc="the NPC to steer",
        text='a private instruction for its next answers, or "clear" to drop it',
        turns="how many of its answers it lasts (default: until you clear it)",
    )
    @dm_only()
    async def direct(
        self,
        interaction: discord.Interaction,
        npc: str,
        text: app_commands.Range[str, 1, MAX_DIRECTION_CHARS],
        turns: app_commands.Range[int, 1, MAX_DIRECTION_TURNS] | None = None,
    ) -> None:
        """Steer an NPC privately: only its prompt sees it, no transcript, memory or recap."""
        session = self._table(interaction).session
        found = session.campaign.find_npc(npc)
        name = found.name if found is not None else npc  # unknown: the session says so
        if text.strip().lower() in ("clear", "stop", "off", "none"):
            cleared = session.controls.clear_direction(npc)
            await reply_privately(
                interaction, f"{name}'s direction cleared." if cleared else f"{name} had none."
            )
            return
        direction = session.controls.direct(npc, text, turns)
        how_long = direction.describe() if direction is not None else "cleared"
        await reply_privately(
            interaction,
            f"{name} follows your direction privately, {how_long}. Players never see it; "
            f"`/direct {name} clear` drops it.",
        )

    @npc_group.command(name="reload")
    @dm_only()
    async def npc_reload(self, interaction: discord.Interaction) -> None:
        """Re-read the NPC files now."""
        changes = await self._table(interaction).session.controls.reload_npcs()
        await reply_privately(interaction, "Reloaded: " + (", ".join(changes) or "no changes"))

    @npc_mute.autocomplete("name")
    @npc_unmute.autocomplete("name")
    @npc_say.autocomplete("name")
    @direct.autocomplete("npc")
    @tier.autocomplete("npc")
    async def _npc_names(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """NPC names for the DM's commands; players (who cannot run them) learn nothing."""
        if not is_dungeon_master(interaction, dm_rule_of(self.bot)):
            return []
        table = self.tables.get(interaction.guild_id or 0)
        try:
            campaign = table.session.campaign if table else await self.bot.default_campaign()
        except GlyphoxaError:
            return []
        names = sorted(campaign.npcs)
        if interaction.command is not None and interaction.command.name in ("mute", "unmute"):
            names.append("all")
        wanted = current.lower()
        return [app_commands.Choice(name=n, value=n) for n in names if wanted in n.lower()][:25]

    # -- /console, /tools, /recap, /roll ---------------------------------------------------------

    @app_commands.command(name="console")
    @dm_only()
    async def console(self, interaction: discord.Interaction) -> None:
        """A private one-time login link to the DM's console (watch and steer in a browser)."""
        hub = getattr(self.bot, "console", None)
        if hub is None:
            raise GlyphoxaError(
                "The console is not running: it is off (console.enabled: false in glyphoxa.yaml) "
                "or could not start (the bot's log says why)."
            )
        minutes = hub.prep.config.console.link_minutes
        # <...> keeps Discord from fetching the link for a preview (that would use it up)
        await reply_privately(
            interaction,
            f"Your console login link (works once, for {minutes:g} minutes; do not share it):\n"
            f"<{hub.login_url()}>",
        )

    @app_commands.command(name="tools")
    @app_commands.describe(npc="only the tools this NPC may use")
    @dm_only()
    async def tools(self, interaction: discord.Interaction, npc: str | None = None) -> None:
        """Visible tools per tier, with health."""
        table = self._table(interaction)
        host = table.parts.tools or getattr(table.session, "tools", None)
        if host is None:
            raise GlyphoxaError("This session runs without a tool host.")
        whitelist: list[str] = ["*"]
        if npc:
            found = table.session.campaign.find_npc(npc)
            if found is None:
                raise GlyphoxaError(f"No NPC named {npc!r}.")
            whitelist = list(found.tools)
        lines = []
        for tier in Tier:
            infos = host.visible_tools(whitelist, tier)
            names = ", ".join(f"{t.name}{'' if t.healthy else ' (unhealthy)'}" for t in infos)
            lines.append(f"**{tier.label}**: {names or 'none'}")
        await reply_privately(interaction, "\n".join(lines))

    @app_commands.command(name="recap")
    @app_commands.describe(sessions="how many past sessions (default 1)")
    @dm_only()
    async def recap(
        self, interaction: discord.Interaction, sessions: app_commands.Range[int, 1, 10] = 1
    ) -> None:
        """'Previously on...': summaries of recent sessions."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        table = self.tables.get(interaction.guild_id or 0)
        memory = table.parts.memory if table else None
        if memory is not None:
            text = await memory.recap(sessions)
        else:
            text = await self.bot.recap(sessions)
        await reply_privately(interaction, text or "Nothing recorded yet.", filename="recap.txt")

    @app_commands.command(name="roll")
    @app_commands.describe(expr="dice expression, e.g. 2d20kh1+5")
    async def roll(self, interaction: discord.Interaction, expr: str) -> None:
        """Roll dice for everyone to see."""
        result = roll_expression(expr)
        who = discord.utils.escape_markdown(interaction.user.display_name)
        text = f"{who} rolls `{result.expression}`: {result.breakdown}"
        extra: dict[str, Any] = {}
        if len(text) > MESSAGE_LIMIT:  # many dice: the total up front, every die in a file
            extra["file"] = fit_message(text, filename="roll.txt")[1]
            text = f"{who} rolls `{result.expression}`: **{result.total}** (every die attached)"
        await interaction.response.send_message(
            text, allowed_mentions=discord.AllowedMentions.none(), **extra
        )

    # -- errors ------------------------------------------------------------------------------------

    async def cog_app_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        text = command_error_text(interaction, error, shown=(GlyphoxaError, ValueError))
        if text is not None:
            await reply_privately(interaction, text)


def _check_can_join(channel: discord.VoiceChannel | discord.StageChannel) -> None:
    """Refuse at once, naming what is missing, where Discord would let a connect time out."""
    me = channel.guild.me
    if me is None:  # not cached: the connect itself will tell
        return
    missing = lacking(channel.permissions_for(me), VOICE_PERMISSIONS)
    if missing:
        labels = [p.label for p in missing]
        needed = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else labels[0]
        raise GlyphoxaError(
            f"I can't join {channel.mention}: I need {needed} there. Allow them for my role "
            "(Edit Channel > Permissions), or invite me again with the link from "
            "`glyphoxa discord setup`."
        )


def _ms_summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"p50 {ordered[len(ordered) // 2]:.0f} ms, max {ordered[-1]:.0f} ms"
