"""Keep the LLM's prompt cache one step ahead of the table.

A local llama.cpp server spends most of a turn's first-token time evaluating the prompt: the
scene transcript alone is a few hundred tokens, about a second on one core. The scene is known
long before the player stops talking, so the NPC's prompt is evaluated ahead: when an NPC
finishes speaking (players often answer right back), and on every partial transcript that shows
who the player is talking to, up to the words said so far. The turn itself then evaluates only
the last few words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from campaigns.basics import Tier
from npcs.context import SceneLine
from npcs.engines import Engine, TurnRequest
from npcs.schema import NpcDefinition

__all__ = ["Prefiller"]

log = logging.getLogger(__name__)


@runtime_checkable
class _Prefills(Protocol):
    async def prefill(self, request: TurnRequest) -> bool: ...


class Prefiller:
    """One prefill at a time, each (NPC, tier, speaker, scene) once; owns its task.

    Args:
        engines: the engine of an NPC (only engines with a ``prefill`` method take part).
        enabled: False turns every call into a no-op (cloud models cache prefixes themselves
            and bill each request).
    """

    def __init__(self, engines: Callable[[NpcDefinition], Engine | None], enabled: bool) -> None:
        self._engines = engines
        self.enabled = enabled
        self._task: asyncio.Task[bool] | None = None
        self._last: tuple[str, Tier, str, int, int, str] | None = None
        self.sent = 0

    @property
    def busy(self) -> bool:
        """A prefill is running (another one would be skipped)."""
        return self._task is not None and not self._task.done()

    def ahead(
        self,
        npc: NpcDefinition,
        speaker: str,
        tier: Tier,
        scene: Sequence[SceneLine],
        text: str = "",
        snapshot: Callable[[], Awaitable[str | None]] | None = None,
    ) -> bool:
        """Prefill ``npc``'s prompt for ``speaker`` saying ``text`` (the words so far; empty
        before they speak), with the campaign facts ``snapshot`` finds, unless a prefill is
        running or this one was done; returns whether it started."""
        if not self.enabled or (self._task is not None and not self._task.done()):
            return False
        key = (npc.name, tier, speaker, len(scene), scene[-1].seq if scene else -1, text)
        if key == self._last:
            return False
        engine = self._engines(npc)
        if not isinstance(engine, _Prefills):
            return False
        self._last = key

        async def run(prefills: _Prefills) -> bool:
            facts = await snapshot() if snapshot is not None else None
            request = TurnRequest(
                npc=npc, speaker=speaker, text=text, tier=tier, scene=list(scene),
                entity_snapshot=facts,
            )  # fmt: skip
            return await prefills.prefill(request)

        self._task = asyncio.create_task(run(engine), name=f"table:prefill:{npc.name}")
        self._task.add_done_callback(self._done)
        return True

    def _done(self, task: asyncio.Task[bool]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.warning("prefill failed: %s", error)
        elif task.result():
            self.sent += 1

    async def aclose(self) -> None:
        """Cancel the running prefill (the session is closing)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
