"""Keep the LLM's prompt cache one step ahead of the table.

A local llama.cpp server spends most of a turn's first-token time evaluating the prompt: the
scene transcript alone is a few hundred tokens, about a second on one core. The scene is known
long before the player stops talking, so the NPC's prompt is evaluated ahead: when a partial
transcript shows who the player is talking to, and when an NPC finishes speaking (players
often answer right back). The turn itself then evaluates only the player's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from npcs.context import SceneLine
from npcs.engines import Engine, TurnRequest
from npcs.schema import NpcDefinition
from tools.tiers import Tier

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
        self._last: tuple[str, Tier, str, int, int] | None = None
        self.sent = 0

    def ahead(
        self, npc: NpcDefinition, speaker: str, tier: Tier, scene: Sequence[SceneLine]
    ) -> bool:
        """Prefill ``npc``'s next prompt unless one is running or this one was done; returns
        whether it started."""
        if not self.enabled or (self._task is not None and not self._task.done()):
            return False
        key = (npc.name, tier, speaker, len(scene), scene[-1].seq if scene else -1)
        if key == self._last:
            return False
        engine = self._engines(npc)
        if not isinstance(engine, _Prefills):
            return False
        self._last = key
        request = TurnRequest(npc=npc, speaker=speaker, text="", tier=tier, scene=list(scene))
        self._task = asyncio.create_task(engine.prefill(request), name=f"table:prefill:{npc.name}")
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
