"""Idle close: a table nobody is at ends itself instead of keeping the bot in voice all night.

The countdown (``session.idle_close_s``) starts when the last person (bots do not count) leaves
the table's voice channel, or at the start if nobody is there; anyone joining before it ends
cancels it, and it starts over when they leave again. Voice state updates from Discord drive it
(the cog hands them to the table); nothing polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import discord

__all__ = ["IdleWatch", "people_in", "spell_duration"]

log = logging.getLogger(__name__)


def people_in(channel: discord.VoiceChannel | discord.StageChannel) -> int:
    """People (not bots) in ``channel`` now, from discord.py's voice-state cache. Discord sends
    the member with each voice state, so members in voice are known without the members
    intent; one that is not is counted as a person (never close on someone's head)."""
    guild = channel.guild
    people = 0
    for user_id in channel.voice_states:
        member = guild.get_member(user_id)
        people += member is None or not member.bot
    return people


def spell_duration(seconds: float) -> str:
    """``600`` -> ``10 minutes``, ``90`` -> ``90 seconds``, ``3600`` -> ``1 hour``."""
    if seconds >= 3600 and seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return f"{hours} hour{'s' if hours != 1 else ''}"
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} second{'s' if seconds != 1 else ''}"


class IdleWatch:
    """Counts down while the table's voice channel has no people in it.

    Args:
        people: how many people are in the channel now.
        after_s: how long the channel may stay empty; 0 or less disables the watch.
        on_idle: awaited once when the countdown ends (the table ends itself).
    """

    def __init__(
        self, people: Callable[[], int], after_s: float, on_idle: Callable[[], Awaitable[None]]
    ) -> None:
        self._people = people
        self.after_s = after_s
        self._on_idle = on_idle
        self._countdown: asyncio.Task[None] | None = None
        self._fired = False

    @property
    def counting(self) -> bool:
        """The channel is empty and the countdown runs."""
        return self._countdown is not None and not self._countdown.done()

    def check(self) -> None:
        """Look at the channel again (someone joined or left): start or cancel the countdown."""
        if self.after_s <= 0 or self._fired:
            return
        if self._people() > 0:
            if self.counting:
                log.info("someone is back in the voice channel; the session stays open")
            self._cancel()
        elif not self.counting:
            log.info("nobody is in the voice channel; the session ends in %.0f s", self.after_s)
            self._countdown = asyncio.get_running_loop().create_task(
                self._count_down(), name="table:idle-close"
            )

    async def _count_down(self) -> None:
        await asyncio.sleep(self.after_s)
        if self._people() > 0:  # a join whose update is still on its way
            return
        self._fired = True
        await self._on_idle()

    def _cancel(self) -> None:
        if self._countdown is not None and not self._countdown.done():
            self._countdown.cancel()
        self._countdown = None

    async def aclose(self) -> None:
        """Stop watching (the table stops); never cancels the close already under way."""
        countdown, self._countdown = self._countdown, None
        if countdown is None or countdown is asyncio.current_task() or self._fired:
            return
        countdown.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await countdown
