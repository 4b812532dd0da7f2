"""One running table in a guild: the session, its voice connection and the tasks around them.

The cog asks a :data:`RuntimeFactory` for the table pieces (session, tool host, memory) so the
Discord layer does not decide which STT/TTS/LLM providers run; ``glyphoxa run`` passes one built
from the configuration, tests pass one built from real local parts. The voice connection is a
:class:`~bot.frontends.discord_bot.voice_link.VoiceLink`: it rejoins when a connection ends, and
when the table cannot stay in voice the runtime stops, tells the Dungeon Master in the session's
text channel and calls ``on_ended`` so the cog forgets it. A table nobody is at ends the same way
once ``session.idle_close_s`` has passed (:mod:`bot.frontends.discord_bot.idle`), saved as by
``/session stop``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import discord

from bot.audio.voice.client import ListeningVoiceClient
from bot.audio.voice.frames import VoiceFrame, hear_by_speaker
from bot.audio.voice.playback import DiscordOut, Playback
from bot.frontends.discord_bot.idle import IdleWatch, people_in, spell_duration
from bot.frontends.discord_bot.voice_link import LinkLost, VoiceLink
from bot.table.session import events as session_events
from bot.telemetry.metrics import METRICS

__all__ = ["RuntimeFactory", "TableParts", "TableRuntime"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TableParts:
    """What a factory builds: a started-able TableSession plus optional helpers."""

    session: Any
    """``bot.table.session.TableSession``."""
    tools: Any = None
    """``tools.host.ToolHost`` used by the session's engines, for ``/tools``."""
    memory: Any = None
    """``campaigns.memory.MemoryStore`` for ``/recap``."""
    closers: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    """Awaited (in reverse order) when the table stops."""


RuntimeFactory = Callable[..., Awaitable[TableParts]]
"""``factory(campaign)``: campaign path or None (configured default) -> the pieces of a new
table; a table resumed after a restart is opened with ``memory_session_id=`` as well."""


class TableRuntime:
    """Owns a table's voice link, playback, receive fan-out and transcript poster.

    Args:
        parts: the session and its helpers.
        transcript: gets every player and NPC line (None: no live transcript).
        alerts: the channel the DM started the session in; without a transcript it still gets
            what the DM must know (an NPC that cannot speak, and why), and it is where the DM
            is told if the table ends on its own.
        on_ended: called once the table stopped on its own (kicked, channel deleted, voice lost).
        rejoin_attempts: rejoins tried after the voice connection ends.
        deaf_after_s: players' packets with nothing decoded this long runs recovery.
        stall_after_s: Discord saying a player speaks with none of their packets arriving
            this long rejoins (the DM is told when it repeats).
        console: the DM's console (``bot.frontends.console.ConsoleHub``) shows the table while it
        runs. end: how the console's "End session" ends the table (as ``/session stop``).
        idle_close_s: end the table once nobody has been in its voice channel this long
            (``bot.frontends.discord_bot.idle``); 0 never.
    """

    def __init__(
        self,
        parts: TableParts,
        transcript: discord.abc.Messageable | None,
        alerts: discord.abc.Messageable | None = None,
        *,
        on_ended: Callable[[TableRuntime], None] | None = None,
        rejoin_attempts: int = 5,
        deaf_after_s: float = 2.0,
        stall_after_s: float = 20.0,
        console: Any = None,
        end: Callable[[], Awaitable[object]] | None = None,
        idle_close_s: float = 0.0,
    ) -> None:
        self.parts = parts
        self.session = parts.session
        self.link: VoiceLink | None = None
        self.playback: Playback | None = None
        self.ended: LinkLost | None = None
        """Why the table stopped on its own, if it did (voice lost for good)."""
        self.idle_closed = False
        """The table ended itself because nobody was in its voice channel."""
        self._transcript = transcript or alerts
        self._alerts_only = transcript is None
        self._alerts = alerts
        self._on_ended = on_ended
        self._rejoin_attempts = rejoin_attempts
        self._deaf_after_s = deaf_after_s
        self._stall_after_s = stall_after_s
        self._idle_close_s = idle_close_s
        self._idle: IdleWatch | None = None
        self._metrics = getattr(self.session, "metrics", METRICS)
        self._lines: asyncio.Queue[str] = asyncio.Queue(200)
        self._poster: asyncio.Task[None] | None = None
        self._untrack_receiver: Callable[[], None] | None = None
        self._guild: discord.Guild | None = None
        self._stopped = False
        self._console = console
        self._console_end = end
        self._feed: Any = None

    @property
    def voice(self) -> ListeningVoiceClient | None:
        """The current voice client (a rejoin replaces it)."""
        return self.link.voice if self.link is not None else None

    async def start(self, channel: discord.VoiceChannel | discord.StageChannel) -> None:
        """Start the session, join ``channel``, hear players and play the mixer."""
        await self.session.start()
        self._guild = channel.guild
        self.link = VoiceLink(
            channel,
            on_connected=self._attach,
            on_lost=self._lost,
            on_notice=self._notify,
            attempts=self._rejoin_attempts,
            deaf_after_s=self._deaf_after_s,
            stall_after_s=self._stall_after_s,
            metrics=self._metrics,
        )
        await self.link.start()
        self.start_transcript()
        if self._console is not None:
            self._feed = self._console.attach(
                self.session,
                f"{channel.guild.name}: {channel.name}",
                members=lambda: [m.display_name for m in channel.members if not m.bot],
                on_end=self._console_end,
            )
        self._idle = IdleWatch(lambda: people_in(channel), self._idle_close_s, self._close_idle)
        self._idle.check()

    def people_changed(self) -> None:
        """Someone joined or left voice in the table's guild (the cog's voice state updates):
        the idle countdown starts or stops."""
        if self._idle is not None and not self._stopped:
            self._idle.check()

    def start_transcript(self) -> None:
        """Post what players and NPCs say to the transcript channel, if one is configured."""
        if self._transcript is None or self._poster is not None:
            return
        self.session.listeners.append(self._on_event)
        self._poster = asyncio.get_running_loop().create_task(
            self._post_transcript(), name="transcript-poster"
        )

    async def stop(self) -> None:
        """Leave voice and stop everything; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        if self._feed is not None:
            with contextlib.suppress(Exception):  # the console never holds a table up
                await self._console.detach(self._feed)
        if self._idle is not None:
            await self._idle.aclose()
        self._detach_receiver()
        if self.playback is not None:
            await self.playback.stop()
        if self.link is not None:
            await self.link.stop()
        if self._poster is not None:
            self._poster.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._poster, timeout=2)
        with contextlib.suppress(Exception):
            await self.session.stop()
        for close in reversed(self.parts.closers):
            try:
                await close()
            except Exception:
                log.exception("closing a table part failed")

    # -- voice link --------------------------------------------------------------------------

    async def _attach(self, voice: ListeningVoiceClient) -> None:
        """A new voice client (first join or a rejoin): hear it, count it, play on it (only
        while there is audio: :mod:`bot.audio.voice.playback`)."""
        voice.listen(self._deliver, self._hear)
        self._detach_receiver()
        # Packets received, dropped and failing to decrypt, read at each Prometheus scrape.
        self._untrack_receiver = self._metrics.track_receiver(voice.receiver.snapshot)
        if self.playback is not None:
            await self.playback.stop()
        name = f"voice-playback:{voice.channel.id}"
        self.playback = Playback(self.session.mixer, DiscordOut(voice), name=name)
        self.playback.start()

    def _hear(self, frames: list[VoiceFrame]) -> list[VoiceFrame]:
        """The socket thread: each player's frames through their open lane, right there."""
        return hear_by_speaker(frames, self.session.hear_frames)

    def _deliver(self, frames: Sequence[VoiceFrame]) -> None:
        """The loop: the frames not heard on the socket thread (a player's first opens a lane)."""
        guild = self._guild
        for frame in frames:
            member = guild.get_member(frame.user_id) if guild is not None else None
            name = member.display_name if member else str(frame.user_id)
            self.session.push_frame(frame.user_id, name, frame.pcm)

    async def _lost(self, lost: LinkLost) -> None:
        self.ended = lost
        if self._on_ended is not None:  # first: the DM may start a new session at once
            self._on_ended(self)
        await self._notify(lost.message)
        await self.stop()

    async def _close_idle(self) -> None:
        """Nobody came back in time: end the session as ``/session stop`` does (transcript and
        memory saved, the bot leaves), then tell the DM."""
        if self._stopped:  # stopped meanwhile (/session stop, shutdown): nothing to close
            return
        self.idle_closed = True
        if self._on_ended is not None:  # the cog forgets the table; nobody resumes it
            self._on_ended(self)
        await self.stop()
        link = self.link
        where = getattr(link.channel, "mention", "the voice channel") if link else "voice"
        await self._notify(
            f"Nobody has been in {where} for {spell_duration(self._idle_close_s)}, so I ended "
            "the session and left (the transcript and campaign memory are saved). Run "
            "`/session start` when you play again."
        )

    async def _notify(self, text: str) -> None:
        channel = self._alerts or self._transcript
        if channel is None:
            log.warning("no text channel to tell the DM: %s", text)
            return
        try:
            await channel.send(text[:1900])
        except discord.HTTPException as error:
            log.warning("could not tell the DM (%s): %s", error, text)

    def _detach_receiver(self) -> None:
        if self._untrack_receiver is not None:
            self._untrack_receiver()
            self._untrack_receiver = None

    # -- transcript --------------------------------------------------------------------------

    def _on_event(self, event: object) -> None:
        line = _transcript_line(event)
        if line is None or (self._alerts_only and not _is_alert(event)):
            return
        if self._lines.full():
            self._lines.get_nowait()
        self._lines.put_nowait(line)

    async def _post_transcript(self) -> None:
        assert self._transcript is not None
        while True:
            line = await self._lines.get()
            try:
                await self._transcript.send(line[:1900])
            except discord.HTTPException as error:
                log.warning("could not post to the transcript channel: %s", error)


def _is_alert(event: object) -> bool:
    return isinstance(event, session_events.TableAlert)


def _transcript_line(event: object) -> str | None:
    if isinstance(event, session_events.TableAlert):
        return f"\u26a0\ufe0f {event.message}"
    if isinstance(event, session_events.PlayerSpoke):
        return f"**{event.speaker}:** {event.text}"
    if isinstance(event, session_events.NpcSpoke):
        trace = event.trace
        if trace.dropped:  # a reaction nobody heard
            return None
        return f"**{trace.npc}** *(NPC, {trace.tier})*: {trace.spoken}"
    if isinstance(event, session_events.DmAction) and event.heard:  # a DM voice command
        return f"*DM by voice: {event.action} {event.detail} (heard \u201c{event.heard}\u201d)*"
    return None
