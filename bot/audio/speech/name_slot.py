"""A name heard early: the opening name slot of a turn, heard over Whisper's full window while
the player is still talking.

A final whose opening slot names nobody ("Mardok, how much for the room?") is heard again over
the 30 s window after the turn ends, which hears names better: 0.4-0.8 s the player waits,
about one FAST turn in ten. The partials usually show that slot before the player is done, so
the lane hears the words so far over the full window as soon as one does (the slot look), while
the rest of the turn is still being said. When the final's opening slot is in doubt and the slot
look heard an NPC's name there, the final takes that name and needs no second look.

Only a name is taken: a slot look that heard no NPC name ("Alright" where the full window
hears "Bartok") is not trusted to clear the doubt, and that final still gets its second look.
A line opening with a player's name must not be given an NPC's name by the slot look.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

import numpy as np

from bot.audio.speech.endpointing import gated
from bot.audio.speech.protocols import FirstLook, TwoLookStt
from bot.audio.speech.scheduler import CpuScheduler, Skipped, Work
from bot.audio.speech.vocabulary import Vocabulary

__all__ = ["SlotLook"]

log = logging.getLogger(__name__)

_HEAD = 1600
"""Samples (0.1 s) that tie a slot look to its utterance: a final's audio starts with them."""


class SlotLook:
    """One utterance's early look at its opening slot; owned (and cancelled) by its lane."""

    def __init__(
        self,
        stt: TwoLookStt,
        vocabulary: Vocabulary,
        scheduler: CpuScheduler,
        resource: str | None,
        audio: np.ndarray,
        heard: str,
    ) -> None:
        self._head = audio[:_HEAD].copy()
        self.skipped = False
        """The CPU had more urgent work: nothing was heard (a later partial may try again)."""
        early = FirstLook(heard, doubtful=True, early=True)
        hear = functools.partial(stt.second_look, audio, early, vocabulary=vocabulary)
        gate = gated(scheduler, Work.PARTIAL, resource)
        self.task: asyncio.Task[str | None] = asyncio.get_running_loop().create_task(
            self._look(hear, gate, vocabulary), name="slot-look"
        )

    async def _look(
        self,
        hear: Callable[[], Awaitable[str]],
        gate: AbstractAsyncContextManager[None],
        vocabulary: Vocabulary,
    ) -> str | None:
        """The NPC name the full window hears in the slot, or None. Waits as partial work: it
        is skipped, never queued, while the CPU has something more urgent."""
        try:
            async with gate:
                text = await hear()
        except Skipped:
            self.skipped = True
            return None
        name = vocabulary.opening_name(text)
        log.debug("slot look: %r (%s)", text, name)
        return name

    def belongs_to(self, audio: np.ndarray) -> bool:
        """``audio`` is the utterance this look was taken of (its start is the same)."""
        head = self._head
        return audio.size >= head.size and np.array_equal(audio[: head.size], head)

    async def name(self) -> str | None:
        """The name heard (waiting for the look if it is still running); None if none was or
        the look failed."""
        try:
            return await asyncio.shield(self.task)
        except asyncio.CancelledError:
            if self.task.cancelled():
                return None
            raise
        except Exception as error:  # the final's own second look decides instead
            log.warning("slot look failed: %s", error)
            return None

    def cancel(self) -> None:
        self.task.cancel()
