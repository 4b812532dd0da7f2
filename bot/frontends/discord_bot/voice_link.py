"""Keep one table in its voice channel: connect, notice when the connection ends, rejoin.

discord.py resumes and reconnects by itself where it can (voice server moves, 4015 crashes,
dropped websockets); when it gives up, or our client leaves because it went deaf, stalled or
stayed down, the link joins again with exponential backoff. It never rejoins a channel it was
removed from (kicked) or that was deleted: then, or when every attempt failed, ``on_lost`` is
told once with a line for the Dungeon Master. A stall that comes back within
``STALL_REPEAT_WINDOW_S`` of the last one is worth the DM's attention too (``on_notice``): the
table recovered, but something between Discord and the bot keeps dropping voice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import discord

from bot.audio.voice.client import ListeningVoiceClient, VoiceEnd
from bot.telemetry.metrics import METRICS, Metrics

__all__ = ["LinkLost", "VoiceLink"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 15.0
STALL_REPEAT_WINDOW_S = 1800.0
"""A second stall this soon after the last one tells the DM (at most once per window)."""
_LEFT_WAIT_S = 3.0


@dataclass(frozen=True, slots=True)
class LinkLost:
    """The table cannot stay in voice."""

    end: VoiceEnd
    message: str
    """What the Dungeon Master reads in the session's text channel."""


def _message(channel: str, end: VoiceEnd, attempts: int, error: str) -> str:
    if end.reason == "kicked":
        return (
            f"I was removed from {channel}, so the session has ended (the transcript is "
            "saved). Run `/session start` when you want me back."
        )
    if end.reason == "channel_deleted":
        return (
            f"The voice channel {channel} was deleted, so the session has ended (the "
            "transcript is saved). Join another voice channel and run `/session start`."
        )
    why = f"{end.reason}: {end.detail}" if end.detail else end.reason
    if end.reason in ("deaf", "stall"):
        return (
            f"I could not hear anyone in {channel} after rejoining {attempts} times ({why}), "
            "so the session has ended (the transcript is saved). Try `/session start` again; "
            "if it happens again, the bot's log has the details."
        )
    return (
        f"I lost the voice connection to {channel} ({why}) and could not rejoin after "
        f"{attempts} attempts (last error: {error or 'none'}), so the "
        "session has ended (the transcript is saved). Check Discord's status and the bot's "
        "Connect permission, then run `/session start`."
    )


def _stall_notice(channel: str, stall: str, count: int, minutes: float) -> str:
    span = f"{minutes:.0f} minute" + ("" if round(minutes) == 1 else "s")
    return (
        f"Voice in {channel} stalled {count} times within {span} ({stall}). "
        "I rejoined the channel each time and the session goes on, but something between "
        "Discord and the bot keeps dropping voice packets: if players are not being heard, "
        "check the bot host's network (a firewall or NAT that drops UDP) or Discord's status."
    )


class VoiceLink:
    """Owns the table's current :class:`ListeningVoiceClient` and its replacements.

    Args:
        channel: the voice (or stage) channel of the table.
        on_connected: awaited with every new voice client (first connect and each rejoin),
            to wire the receive fan-out and playback to it.
        on_lost: awaited once if the table cannot stay in voice.
        on_notice: awaited with a line for the Dungeon Master when stalls repeat.
        attempts: rejoins tried after a connection ends (delays 1, 2, 4, ... s).
        deaf_after_s: see :class:`ListeningVoiceClient`.
        stall_after_s: see :class:`ListeningVoiceClient`.
    """

    def __init__(
        self,
        channel: discord.VoiceChannel | discord.StageChannel,
        *,
        on_connected: Callable[[ListeningVoiceClient], Awaitable[None]],
        on_lost: Callable[[LinkLost], Awaitable[None]],
        on_notice: Callable[[str], Awaitable[None]] | None = None,
        attempts: int = 5,
        first_delay_s: float = 1.0,
        deaf_after_s: float = 2.0,
        stall_after_s: float = 20.0,
        metrics: Metrics = METRICS,
    ) -> None:
        self.channel = channel
        self._on_connected = on_connected
        self._on_lost = on_lost
        self._attempts = attempts
        self._first_delay = first_delay_s
        self._on_notice = on_notice
        self._deaf_after = deaf_after_s
        self._stall_after = stall_after_s
        self._metrics = metrics
        self.voice: ListeningVoiceClient | None = None
        self.rejoins = 0
        self.outages_s: list[float] = []
        """How long each rejoin took, from the end of a connection to the next one."""
        self._watcher: asyncio.Task[None] | None = None
        self._stopping = False
        self._connected_at = 0.0
        self._deaf_in_a_row = 0
        self.stall_times: list[float] = []
        """When each stall ended a connection (``time.monotonic()``)."""
        self._stall_noticed_at: float | None = None

    async def start(self) -> None:
        """Join the channel (raises if that fails: the DM's command reports it)."""
        self.voice = await self._connect()
        await self._on_connected(self.voice)
        self._watcher = asyncio.get_running_loop().create_task(self._watch(), name="voice-link")

    async def stop(self) -> None:
        """Leave voice for good; safe to call twice and from ``on_lost``."""
        self._stopping = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        voice = self.voice
        if voice is not None and not voice.ended.done():
            try:
                await voice.disconnect(force=True)
            except Exception:
                log.exception("leaving voice failed")
                voice.cleanup()

    async def _connect(self) -> ListeningVoiceClient:
        self._connected_at = time.monotonic()

        def client(bot: discord.Client, channel: discord.abc.Connectable) -> ListeningVoiceClient:
            return ListeningVoiceClient(
                bot,
                channel,
                deaf_after_s=self._deaf_after,
                stall_after_s=self._stall_after,
                metrics=self._metrics,
            )

        voice = await self.channel.connect(
            cls=client, self_deaf=False, timeout=CONNECT_TIMEOUT_S, reconnect=True
        )
        assert isinstance(voice, ListeningVoiceClient)
        return voice

    async def _watch(self) -> None:
        while not self._stopping:
            assert self.voice is not None
            end = await asyncio.shield(self.voice.ended)  # cancelling us must not cancel it
            if self._stopping:
                return
            self._metrics.voice_events.labels("ended", end.reason).inc()
            heard = self.voice.receiver.last_decoded_at > self._connected_at
            unheard = end.reason in ("deaf", "stall") and not heard
            self._deaf_in_a_row = self._deaf_in_a_row + 1 if unheard else 0
            if not end.rejoin or self._deaf_in_a_row > self._attempts:
                await self._lose(end, self._deaf_in_a_row, "deaf again after every rejoin")
                return
            log.warning("voice connection ended (%s %s); rejoining", end.reason, end.detail)
            started = time.monotonic()
            voice, error = await self._rejoin()
            if voice is None:
                await self._lose(end, self._attempts, error)
                return
            self.rejoins += 1
            self.outages_s.append(time.monotonic() - started)
            self._metrics.voice_events.labels("rejoined", end.reason).inc()
            self.voice = voice
            await self._on_connected(voice)
            if end.reason == "stall":
                await self._stalled(end)

    async def _stalled(self, end: VoiceEnd) -> None:
        """Rejoined after a stall: tell the DM if stalls repeat (once per window)."""
        now = time.monotonic()
        self.stall_times.append(now)
        recent = [t for t in self.stall_times if now - t <= STALL_REPEAT_WINDOW_S]
        noticed = self._stall_noticed_at
        if len(recent) < 2 or (noticed is not None and now - noticed < STALL_REPEAT_WINDOW_S):
            return
        self._stall_noticed_at = now
        name = getattr(self.channel, "mention", None) or f"#{self.channel.id}"
        minutes = max(1.0, (now - recent[0]) / 60)
        text = _stall_notice(name, end.detail, len(recent), minutes)
        log.warning("telling the DM: %s", text)
        if self._on_notice is not None:
            await self._on_notice(text)

    async def _rejoin(self) -> tuple[ListeningVoiceClient | None, str]:
        delay, error = self._first_delay, ""
        for attempt in range(1, self._attempts + 1):
            if self.channel.guild.get_channel(self.channel.id) is None:
                return None, "the voice channel no longer exists"
            await self._wait_left()
            try:
                return await self._connect(), ""
            except Exception as failure:  # any failed connect is one failed attempt
                error = f"{type(failure).__name__}: {failure}".rstrip(": ")
                log.warning("rejoin attempt %d/%d failed: %s", attempt, self._attempts, error)
                await self._leave_half_open()
            if attempt < self._attempts:
                await asyncio.sleep(delay)
                delay *= 2
        return None, error

    async def _wait_left(self) -> None:
        """Until Discord confirmed the previous connection left (VOICE_STATE_UPDATE without a
        channel): arriving during the next connect, that update would end it as a kick."""
        guild = self.channel.guild
        me = guild._state.self_id
        deadline = time.monotonic() + _LEFT_WAIT_S
        # discord.py caches voice states without members; the bot's own is in there too (and
        # a second "left" update stores one with no channel).
        while me is not None and getattr(guild._voice_state_for(me), "channel", None):
            if time.monotonic() > deadline:
                log.info("Discord has not confirmed that the bot left voice; joining anyway")
                return
            await asyncio.sleep(0.05)

    async def _leave_half_open(self) -> None:
        """A failed ``connect`` may leave discord.py's voice client registered; drop it."""
        stale = self.channel.guild.voice_client
        if stale is not None:
            try:
                await stale.disconnect(force=True)
            except Exception:
                log.debug("dropping a half-open voice client failed", exc_info=True)

    async def _lose(self, end: VoiceEnd, attempts: int, error: str) -> None:
        self._stopping = True
        self._metrics.voice_events.labels("lost", end.reason).inc()
        name = getattr(self.channel, "mention", None) or f"#{self.channel.id}"
        lost = LinkLost(end, _message(name, end, attempts, error))
        log.warning("table leaves voice for good: %s", lost.message)
        await self._on_lost(lost)
