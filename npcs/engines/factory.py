"""Builds the engines a table needs from provider settings, and picks one per NPC."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from npcs.engines.cascaded import CascadedEngine
from npcs.engines.events import Engine
from npcs.engines.realtime import DEFAULT_REALTIME_MODEL, RealtimeEngine
from npcs.engines.sentence_cascade import SentenceCascadeEngine
from npcs.inference.openai_client import make_openai_client
from npcs.schema import EngineKind, NpcDefinition

if TYPE_CHECKING:
    from tools.host import ToolHost

__all__ = ["EngineSet", "build_engines", "make_openai_client"]

log = logging.getLogger(__name__)


@dataclass
class EngineSet:
    """One engine of each kind available at the table."""

    cascaded: CascadedEngine
    realtime: RealtimeEngine | None = None
    sentence_cascade: SentenceCascadeEngine | None = None

    def for_npc(self, npc: NpcDefinition) -> Engine:
        """The NPC's configured engine, or cascaded when that kind is not configured."""
        if npc.engine is EngineKind.REALTIME:
            if self.realtime is not None:
                return self.realtime
            log.warning("%s wants the realtime engine but providers.realtime is empty", npc.name)
        if npc.engine is EngineKind.SENTENCE_CASCADE and self.sentence_cascade is not None:
            return self.sentence_cascade
        return self.cascaded

    async def aclose(self) -> None:
        if self.realtime is not None:
            with contextlib.suppress(Exception):
                await self.realtime.aclose()


def build_engines(
    llm_client: Any,
    llm_model: str,
    *,
    host: ToolHost | None,
    realtime_client: Any = None,
    realtime_model: str | None = None,
    fast_model: str | None = None,
    stream_tool_rounds: bool = True,
    max_depth: int = 4,
) -> EngineSet:
    """Engines sharing one tool host. ``stream_tool_rounds=False`` for llama.cpp's server."""
    cascaded = CascadedEngine(
        llm_client,
        model=llm_model,
        host=host,
        max_depth=max_depth,
        stream_tool_rounds=stream_tool_rounds,
    )
    realtime = None
    if realtime_client is not None:
        realtime = RealtimeEngine(
            realtime_client,
            model=realtime_model or DEFAULT_REALTIME_MODEL,
            host=host,
            fallback=cascaded,
        )
    cascade = SentenceCascadeEngine(cascaded, fast_model=fast_model)
    return EngineSet(cascaded=cascaded, realtime=realtime, sentence_cascade=cascade)
