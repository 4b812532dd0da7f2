"""One running table in a guild: the session, its voice connection and the tasks around them.

The cog asks a :data:`RuntimeFactory` for the table pieces (session, tool host, memory) so the
Discord layer does not decide which STT/TTS/LLM providers run; ``glyphoxa run`` passes one built
from the configuration, tests pass one built from real local parts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import discord

from bot.metrics import METRICS
from bot.session import events as session_events
from bot.voice.client import ListeningVoiceClient
from bot.voice.playback import MixerSource, PlaybackKeeper
from bot.voice.receiver import VoiceFrame
from bot.voice.speakers import SpeakerQueues

__all__ = ["RuntimeFactory", "TableParts", "TableRuntime"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TableParts:
    """What a factory builds: a started-able TableSession plus optional helpers."""

    session: Any
    """``bot.session.TableSession``."""
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
    """Owns a table's voice connection, playback, receive fan-out and transcript poster."""

    def __init__(
        self,
        parts: TableParts,
        transcript: discord.abc.Messageable | None,
        alerts: discord.abc.Messageable | None = None,
    ) -> None:
        """``transcript`` gets every line; without one, ``alerts`` (the channel the DM started
        the session in) still gets what the DM must know: an NPC that cannot speak, and why."""
        self.parts = parts
        self.session = parts.session
        self.voice: ListeningVoiceClient | None = None
        self.playback: PlaybackKeeper | None = None
        self.speakers: SpeakerQueues | None = None
        self._transcript = transcript or alerts
        self._alerts_only = transcript is None
        self._lines: asyncio.Queue[str] = asyncio.Queue(200)
        self._poster: asyncio.Task[None] | None = None
        self._untrack_receiver: Callable[[], None] | None = None

    async def start(self, channel: discord.VoiceChannel | discord.StageChannel) -> None:
        """Start the session, join ``channel``, hear players and play the mixer."""
        await self.session.start()
        self.voice = await channel.connect(cls=ListeningVoiceClient, self_deaf=False)
        guild = channel.guild

        def push(frame: VoiceFrame) -> None:
            member = guild.get_member(frame.user_id)
            name = member.display_name if member else str(frame.user_id)
            self.session.push_frame(frame.user_id, name, frame.pcm)

        self.speakers = SpeakerQueues(push)
        self.voice.listen(self.speakers)
        # Packets received, dropped and failing to decrypt, read at each Prometheus scrape.
        metrics = getattr(self.session, "metrics", METRICS)
        self._untrack_receiver = metrics.track_receiver(self.voice.receiver.snapshot)
        self.playback = PlaybackKeeper(self.voice, MixerSource(self.session.mixer.next_frame))
        self.playback.start()
        self.start_transcript()

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
        if self._untrack_receiver is not None:
            self._untrack_receiver()
            self._untrack_receiver = None
        if self.playback is not None:
            await self.playback.stop()
        if self.voice is not None and self.voice.is_connected():
            with contextlib.suppress(Exception):
                await self.voice.disconnect(force=True)
        if self.speakers is not None:
            await self.speakers.aclose()
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
        return f"**{trace.npc}** *(NPC, {trace.tier})*: {trace.spoken}"
    if isinstance(event, session_events.DmAction) and event.heard:  # a DM voice command
        return f"*DM by voice: {event.action} {event.detail} (heard \u201c{event.heard}\u201d)*"
    return None
