"""The one engine factory: the engines a table's NPCs answer with, from ``providers.llm`` and
``providers.realtime``, with production's defaults; ``glyphoxa chat`` uses it too."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bot.settings.config import GlyphoxaConfig
from bot.settings.providers import LlmOptions, LlmProvider
from bot.table.assembly.providers import llm_client, local_llm_server
from npcs.engines import CascadedEngine, Engine
from npcs.inference.pools import InferencePool
from npcs.schema import EngineKind, NpcDefinition
from tools.host import ToolHost

__all__ = ["Engines", "open_engines"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_LOCAL_TEMPERATURE = 0.3
"""The local model's temperature for NPCs that set none, chosen on ``glyphoxa bench words``:
its answers were grounded in what was retrieved more often than at the server's 0.8, with as
few repairs (docs/performance.md)."""
_BUNDLED_REPEAT_PENALTY = 1.1
"""The bundled server's repeat penalty (llama.cpp's own default), until the words benchmark
says otherwise (docs/performance.md, "What an NPC says")."""
ServerChange = Callable[[str | None, str], None]
"""Told (reason, one line) when the bundled LLM server goes down or comes back."""


@dataclass
class Engines:
    """One engine of each kind the table has; ``for_npc`` picks an NPC's."""

    cascaded: CascadedEngine
    by_kind: dict[EngineKind, Engine] = field(default_factory=dict)
    warm_up: asyncio.Task[None] | None = None
    """The background warm-up of the LLM's prompt cache, if any."""
    fallback: CascadedEngine | None = None
    """``session.spend.fallback``'s engine: every NPC's once the hard spending limit is hit."""
    fallback_model: str = ""
    switched: bool = False
    """The hard limit was hit: every NPC answers through ``fallback``."""

    def for_npc(self, npc: NpcDefinition) -> Engine | None:
        """The NPC's engine kind; the cascaded engine where that kind is not configured; the
        fallback for every NPC after the switch."""
        if self.switched and self.fallback is not None:
            return self.fallback
        return self.by_kind.get(npc.engine, self.cascaded)

    def engines(self) -> list[Engine]:
        """Every engine built, the fallback included (to attach the spend meter)."""
        built = list(self.by_kind.values())
        return built + ([self.fallback] if self.fallback is not None else [])


async def open_engines(
    config: GlyphoxaConfig,
    host: ToolHost | None,
    stack: contextlib.AsyncExitStack,
    *,
    base_url: str | None = None,
    say: Callable[[str], None] = lambda message: log.info("%s", message),
    npcs: Iterable[NpcDefinition] = (),
    on_server_change: ServerChange | None = None,
    pool: InferencePool | None = None,
) -> Engines:
    """Engine per NPC kind, closed with ``stack``. Realtime needs ``providers.realtime``;
    without it realtime NPCs answer through the cascaded engine.

    The bundled local server (``providers.llm.name: local`` without a ``base_url``) is started
    here; it keeps KV snapshots of prompt prefixes, and each NPC's stable prefix (system prompt
    + tool descriptions) is evaluated in the background (``options.warm_up``), so turns only
    evaluate the scene and the player's words; answers stop where the small model starts
    another speaker's line."""
    llm = config.providers.llm
    cascaded = await _cascaded_engine(
        llm, host, stack, base_url=base_url, say=say, on_server_change=on_server_change, pool=pool
    )
    engines = Engines(cascaded, {EngineKind.CASCADED: cascaded})
    bundled = llm.name == "local" and base_url is None and llm.base_url is None
    if _or(llm.options.warm_up, bundled):
        engines.warm_up = _warm_up_in_background(cascaded, list(npcs), stack)
    await _optional_engines(config, host, engines, stack)
    spend = config.session.spend
    if spend.fallback is not None and spend.hard is not None and spend.on_hard == "fallback":
        say("opening the spend fallback's model")  # now, so the switch at the limit is instant
        engines.fallback = await _cascaded_engine(
            spend.fallback, host, stack, say=say, on_server_change=on_server_change, pool=pool
        )
        local = spend.fallback.name == "local"  # the bundled server names its model by path
        engines.fallback_model = spend.fallback.model or (
            "the local model" if local else engines.fallback.model
        )
    return engines


async def _cascaded_engine(
    llm: LlmProvider,
    host: ToolHost | None,
    stack: contextlib.AsyncExitStack,
    *,
    base_url: str | None = None,
    say: Callable[[str], None],
    on_server_change: ServerChange | None,
    pool: InferencePool | None,
) -> CascadedEngine:
    """A cascaded engine over one LLM provider section (``providers.llm``, the spend
    fallback), starting the bundled server when the section asks for it."""
    local = llm.name == "local"
    options = llm.options
    bundled = local and base_url is None and llm.base_url is None
    server = None
    if bundled:
        say("starting the local LLM server (llama.cpp)")
        server = await stack.enter_async_context(local_llm_server(llm))
        base_url = server.base_url
        model = server.model_id or llm.model or "local"
        if on_server_change is not None:
            server.on_change.append(on_server_change)
    else:
        model = llm.model or ("local" if local else "gpt-4o-mini")
    # The supervised local server fails at once, never retried; an inference server is pooled.
    client = llm_client(llm, base_url=base_url, pool=None if bundled else pool)
    stack.push_async_callback(client.close)
    return CascadedEngine(
        client,
        model=model,
        host=host,
        # A 135M model may call tools round after round: two rounds keep rehearsals listenable.
        max_depth=_or(options.max_tool_depth, 2 if local else 4),
        stream_tool_rounds=options.stream_tool_rounds,
        stop_at_speakers=_or(options.stop_at_speakers, local),
        max_stops=None if local else 4,
        # A shorter scene is evaluated faster, but a sliding window also breaks prefix reuse.
        scene_chars=options.scene_chars,
        follow_up_scene=options.follow_up_scene,
        retry_in_character=_or(options.retry_in_character, bundled),
        open_in_character=_or(options.open_in_character, bundled),
        health=server,
        temperature=_or(options.temperature, _LOCAL_TEMPERATURE if local else None),
        sampling=_sampling(options, llama_cpp=local),
    )


def _sampling(options: LlmOptions, *, llama_cpp: bool) -> dict[str, Any]:
    """The request settings ``options`` add to every round: a repeat penalty set in the config
    goes to any server (llama.cpp and vLLM read it); the bundled default only to llama.cpp."""
    sampling: dict[str, Any] = {}
    if options.frequency_penalty is not None:
        sampling["frequency_penalty"] = options.frequency_penalty
    repeat = _or(options.repeat_penalty, _BUNDLED_REPEAT_PENALTY if llama_cpp else None)
    if repeat is not None:
        sampling["extra_body"] = {"repeat_penalty": repeat}
    return sampling


def _or(written: _T | None, default: _T) -> _T:
    """An option as written, or its default where it was left empty."""
    return default if written is None else written


def _warm_up_in_background(
    engine: CascadedEngine, npcs: list[NpcDefinition], stack: contextlib.AsyncExitStack
) -> asyncio.Task[None]:
    """Prefill the LLM server's prompt cache per NPC while the table gets going."""

    async def warm() -> None:
        started = time.monotonic()
        try:
            count = await engine.warm_up(npcs)
        except Exception as error:  # a warm-up is an optimisation, never a failure
            log.warning("LLM warm-up failed: %s", error)
            return
        elapsed = time.monotonic() - started
        log.info("LLM prompt cache warmed for %d prompts in %.1f s", count, elapsed)

    task = asyncio.create_task(warm(), name="llm-warm-up")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)
    return task


async def _optional_engines(
    config: GlyphoxaConfig,
    host: ToolHost | None,
    engines: Engines,
    stack: contextlib.AsyncExitStack,
) -> None:
    """Sentence cascade (fast opener, the cascaded engine continues) always; realtime when
    ``providers.realtime`` is configured (else realtime NPCs answer through the cascade)."""
    from npcs.engines import RealtimeEngine, SentenceCascadeEngine

    cascaded = engines.cascaded
    engines.by_kind[EngineKind.SENTENCE_CASCADE] = SentenceCascadeEngine(cascaded)
    if config.providers.realtime is not None:
        realtime = RealtimeEngine.from_config(
            config.providers.realtime, host=host, fallback=cascaded
        )
        engines.by_kind[EngineKind.REALTIME] = realtime
        stack.push_async_callback(realtime.aclose)  # its NPCs' connections end with the table
