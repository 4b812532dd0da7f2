"""Assemble a ``TableSession`` from ``glyphoxa.yaml``: STT, voices, memory, tools, engines.

``open_table(config)`` is what the Discord cog and the rehearsal both use, so a rehearsal runs
exactly the production pipeline. When ``providers.llm.name`` is ``local`` and no ``base_url``
is given, the bundled llama.cpp server is started as a subprocess and stopped at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bot.config import GlyphoxaConfig
from bot.config_providers import LlmProvider
from bot.config_providers import SttProvider as SttSection
from bot.config_providers import TtsProvider as TtsSection
from bot.metrics import METRICS, Metrics, start_metrics_server
from bot.session.session import TableSession
from bot.speech import FasterWhisperStt, Mixer, OpenAiStt, SttProvider, TtsProvider, VoiceRouter
from bot.speech.turn_model import load_turn_model
from campaigns.basics import GlyphoxaError, Tier
from campaigns.yamlio import ContentError
from npcs.campaign import Campaign, load_campaign
from npcs.campaign.checks import npc_voice_issue
from npcs.engines import CascadedEngine, Engine
from npcs.inference.pools import InferencePool
from npcs.schema import EngineKind, NpcDefinition
from tools.catalog import ToolCatalog
from tools.host import Invocation, ToolHost
from tools.host.known_tools import known_tools_beside
from tools.host.persistence import store_invocation_logger

if TYPE_CHECKING:
    from npcs.inference.server import LocalLlmServer

__all__ = ["builtin_servers_for", "load_stt", "local_llm_server", "open_table"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
_T = TypeVar("_T")


async def load_stt(provider: SttSection, pool: InferencePool | None = None) -> SttProvider:
    """The configured recognizer, loaded off the event loop; a remote one goes through
    ``pool`` (pooled connections, this table's request limit, retries)."""
    if provider.name in ("faster-whisper", "whisper", "local"):
        options = provider.options
        return await FasterWhisperStt.load(
            provider.model,
            cpu_threads=options.cpu_threads,
            beam_size=options.beam_size,
            window_s=options.window_s,
            partial_window_s=options.partial_window_s,
        )
    if provider.name == "openai":
        return OpenAiStt(
            model=provider.model or "gpt-4o-mini-transcribe",
            base_url=provider.base_url,
            api_key=provider.api_key,
            client=pool.for_provider("stt", provider) if pool is not None else None,
        )
    raise GlyphoxaError(
        f"unknown providers.stt.name {provider.name!r}; choose faster-whisper or openai"
    )


def local_llm_server(llm: LlmProvider) -> LocalLlmServer:
    """The bundled llama.cpp server as ``providers.llm.options`` set it up: ``model_path`` (a
    GGUF of your own; default SmolLM2), ``n_threads`` (1: speech recognition and the voices
    share the cores, so a second LLM thread slows answers on a small machine; ``glyphoxa bench
    llm`` measures it), ``n_ctx``, ``prompt_cache`` (KV snapshots of each NPC's prompt prefix)
    and ``nice`` (the server's CPU priority: 10 below the bot's, so the voice and the ears go
    first)."""
    from npcs.inference.server import LocalLlmServer

    options = llm.options
    return LocalLlmServer(
        options.model_path or None,
        n_ctx=options.n_ctx,
        n_threads=options.n_threads,
        cache=options.prompt_cache,
        nice=options.nice,
    )


def builtin_servers_for(
    npcs: Iterable[NpcDefinition], config: GlyphoxaConfig | None = None
) -> list[str]:
    """Built-in servers whose tools the NPCs' ``tools:`` lists grant, read as the registry
    reads them (``tools.selection``: ``dice.*`` starts dice; ``*`` starts every server)."""
    config = config or GlyphoxaConfig()
    catalog = ToolCatalog.from_config(
        config.mcp.servers,
        known_tools_path=known_tools_beside(Path(config.tools.calibration_path)),
    )
    return catalog.builtin_servers_for(npc.tools for npc in npcs)


@contextlib.asynccontextmanager
async def open_table(
    config: GlyphoxaConfig,
    *,
    campaign: Campaign | str | Path | None = None,
    memory_url: str | None = None,
    llm_base_url: str | None = None,
    stt: SttProvider | None = None,
    tts: TtsProvider | None = None,
    metrics: Metrics = METRICS,
    dm_speakers: Iterable[str] = (),
    title: str | None = None,
    progress: Progress | None = None,
    memory_session_id: str | None = None,
    inference: InferencePool | None = None,
    serve_metrics: bool = True,
) -> AsyncIterator[TableSession]:
    """A started ``TableSession`` with every provider the config names; all closed on exit.
    ``memory_session_id`` continues that memory session (a table resumed after a restart);
    ``inference`` is the process's connection pools to remote model servers (``glyphoxa
    run`` shares one between its tables; without it the table has its own);
    ``serve_metrics=False`` when the process serves ``/metrics`` itself (``glyphoxa run``:
    one endpoint however many tables run)."""
    say = progress or (lambda message: log.info("%s", message))
    if not isinstance(campaign, Campaign):
        campaign = load_campaign(campaign or config.campaign.path)
    from bot.memory_access import open_memory
    from tools.builtin import build_tool_context, create_builtin_servers

    async with contextlib.AsyncExitStack() as stack:
        server = start_metrics_server(config.metrics, metrics) if serve_metrics else None
        if server is not None:
            stack.callback(server.close)
            say(f"metrics at {server.url}")
        if inference is None:
            inference = InferencePool()
            stack.push_async_callback(inference.aclose)
            stack.callback(metrics.attach(inference.registry))
        tts = tts or _voices(config.providers.tts, inference)
        _refuse_missing_voices(campaign, tts)
        say("loading speech recognizer")
        stt = stt or await load_stt(config.providers.stt, inference)
        turn_model = await load_turn_model(config.speech.turn)
        say("opening campaign memory")
        seeded = config.model_copy(
            update={"campaign": config.campaign.model_copy(update={"path": str(campaign.path)})}
        )
        memory = await open_memory(seeded, url=memory_url)
        stack.push_async_callback(memory.close)
        mixer = Mixer(config.speech)
        session_ref: list[TableSession] = []

        log_to_memory = store_invocation_logger(
            memory, session_id=lambda: session_ref[0].recorder.session_id if session_ref else None
        )

        async def on_invocation(call: Invocation) -> None:
            metrics.observe_tool(call.status, call.tier.label)
            try:
                await log_to_memory(call)
            except Exception as error:  # a full disk must not fail the NPC's turn
                log.warning("could not log tool call %s: %s", call.tool, error)

        context = build_tool_context(
            config.tools, campaign_dir=campaign.path, memory=memory, ambience=mixer.ambience
        )
        servers = builtin_servers_for(campaign.npcs.values(), config)
        say(f"starting tools ({', '.join(servers) or 'none'})")
        host = ToolHost(
            config.mcp,
            builtins=create_builtin_servers(context, servers),
            calibration_path=Path(config.tools.calibration_path),
            ceilings_ms={Tier.parse(k): v for k, v in config.tiers.ceilings_ms.items()},
            on_invocation=on_invocation,
        )
        stack.callback(metrics.attach(host.metrics.registry))
        # DM approval: the campaign's settings and each NPC's current ``approval`` (hot reload
        # replaces the NPC objects); who answers is set by the front end (Discord, rehearsal).
        npcs = campaign.npcs
        host.approvals.configure(
            campaign=campaign.meta.approval,
            rules_for=lambda name: npc.approval if (npc := npcs.get(name)) else None,
        )
        await stack.enter_async_context(host)
        engines, warm_up = await _engines(
            config, host, llm_base_url, stack, say, campaign.npcs.values(), session_ref, inference
        )
        session = TableSession(
            config=config,
            campaign=campaign,
            stt=stt,
            tts=tts,
            engines=engines,
            memory=memory,
            mixer=mixer,
            metrics=metrics,
            dm_speakers=dm_speakers,
            session_title=title,
            speculate=_speculation_policy(config),
            prefill=_prefill_policy(config),
            memory_session_id=memory_session_id,
            turn_model=turn_model,
        )
        session.tools = host
        session.warm_up = warm_up
        session_ref.append(session)
        context.session_id = None
        await session.start()
        context.session_id = session.recorder.session_id
        stack.push_async_callback(session.stop)
        yield session


def _refuse_missing_voices(campaign: Campaign, tts: TtsProvider) -> None:
    """Every NPC's voice must be installed before the table opens (the rule of ``glyphoxa
    check``): a missing voice is refused here, never replaced by another at the table."""
    inventory = tts.inventory if isinstance(tts, VoiceRouter) else None
    if inventory is None:
        return
    issues = [
        issue
        for name, npc in campaign.npcs.items()
        if (issue := npc_voice_issue(npc, campaign.npc_files.get(name), None, inventory))
    ]
    if issues:
        raise ContentError(issues)


def _voices(tts: TtsSection, pool: InferencePool) -> VoiceRouter:
    remote = pool.for_provider("tts", tts) if tts.name == "openai" else None
    return VoiceRouter.from_config(tts, client=remote)


def _speculation_policy(config: GlyphoxaConfig) -> bool:
    """Speculative answers on partials (``providers.llm.options.speculate`` overrides).

    Every round streams (the bundled server too), so a dropped speculation is cancelled at
    once, and even then it leaves the prompt prefix in llama.cpp's cache for the real turn.
    """
    return config.providers.llm.options.speculate


def _prefill_policy(config: GlyphoxaConfig) -> bool:
    """Prompts evaluated ahead of turns (``providers.llm.options.prefill`` overrides): on for a
    local llama.cpp server, off for cloud APIs (they cache prefixes themselves, bill requests)."""
    llm = config.providers.llm
    return llm.options.prefill if llm.options.prefill is not None else llm.name == "local"


async def _engines(
    config: GlyphoxaConfig,
    host: ToolHost,
    base_url: str | None,
    stack: contextlib.AsyncExitStack,
    say: Progress,
    npcs: Iterable[NpcDefinition] = (),
    sessions: list[TableSession] | None = None,
    pool: InferencePool | None = None,
) -> tuple[Callable[[NpcDefinition], Engine | None], asyncio.Task[None] | None]:
    """Engine per NPC kind, and the background warm-up of the LLM's prompt cache (if any).
    Realtime needs ``providers.realtime``; without it realtime NPCs answer through the
    cascaded engine.

    The bundled local server keeps KV snapshots of prompt prefixes, and each NPC's stable
    prefix (system prompt + tool descriptions) is evaluated in the background
    (``providers.llm.options.warm_up``), so turns only evaluate the scene and the player's
    words; answers stop where the small model starts another speaker's line."""
    from openai import AsyncOpenAI

    llm = config.providers.llm
    local = llm.name == "local"
    options = llm.options
    bundled = local and base_url is None and llm.base_url is None
    server = None
    if bundled:
        say("starting the local LLM server (llama.cpp)")
        server = await stack.enter_async_context(local_llm_server(llm))
        base_url = server.base_url
        model = server.model_id or llm.model or "local"

        def tell_dm(reason: str | None, message: str) -> None:
            for session in sessions or ():
                session.trouble.part_changed("llm_server", reason, message)

        server.on_change.append(tell_dm)
    else:
        model = llm.model or ("local" if local else "gpt-4o-mini")
    if bundled or pool is None:  # supervised local server: fail at once, never retry
        api_key = llm.api_key.get_secret_value() if llm.api_key else "not-needed"
        timeout = options.timeout_s if options.timeout_s is not None else 60.0
        client = AsyncOpenAI(
            base_url=base_url or llm.base_url, api_key=api_key, max_retries=0, timeout=timeout
        )
    else:  # an inference server: pooled, limited per table, retried on 429/5xx
        client = pool.for_provider("llm", llm, base_url=base_url)
    stack.push_async_callback(client.close)
    cascaded = CascadedEngine(
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
        health=server,
    )
    warm_up = None
    if _or(options.warm_up, bundled):
        warm_up = _warm_up_in_background(cascaded, list(npcs), stack)
    by_kind: dict[EngineKind, Engine] = {EngineKind.CASCADED: cascaded}
    _optional_engines(config, host, cascaded, by_kind)

    def resolve(npc: NpcDefinition) -> Engine | None:
        return by_kind.get(npc.engine, cascaded)

    return resolve, warm_up


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


def _optional_engines(
    config: GlyphoxaConfig,
    host: ToolHost,
    cascaded: CascadedEngine,
    by_kind: dict[EngineKind, Engine],
) -> None:
    """Sentence cascade (fast opener, the cascaded engine continues) always; realtime when
    ``providers.realtime`` is configured (else realtime NPCs answer through the cascade)."""
    from npcs.engines import RealtimeEngine, SentenceCascadeEngine

    by_kind[EngineKind.SENTENCE_CASCADE] = SentenceCascadeEngine(cascaded)
    if config.providers.realtime is not None:
        by_kind[EngineKind.REALTIME] = RealtimeEngine.from_config(
            config.providers.realtime, host=host, fallback=cascaded
        )
