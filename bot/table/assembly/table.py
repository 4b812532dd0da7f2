"""Assemble a ``TableSession`` from ``glyphoxa.yaml``: STT, voices, memory, tools, engines.

``open_table(config)`` is what the Discord cog and the rehearsal both use, so a rehearsal runs
exactly the production pipeline. When ``providers.llm.name`` is ``local`` and no ``base_url``
is given, the bundled llama.cpp server is started as a subprocess and stopped at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.audio.speech import Mixer, SttProvider, TtsProvider, VoiceRouter
from bot.audio.speech.turn_model import load_turn_model
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.engines import Engines, open_engines
from bot.table.assembly.providers import load_stt, voices
from bot.table.assembly.spend import attach_memory_meter, attach_meter, spend_meter
from bot.table.session.builder import build_session
from bot.table.session.session import TableSession
from bot.telemetry.metrics import METRICS, Metrics, start_metrics_server
from campaigns.basics import Tier
from campaigns.yamlio import ContentError
from npcs.campaign import Campaign, load_campaign
from npcs.campaign.checks import npc_voice_issue
from npcs.inference.pools import InferencePool
from npcs.schema import NpcDefinition
from tools.catalog import ToolCatalog
from tools.host import Invocation, ToolHost
from tools.host.known_tools import known_tools_beside
from tools.host.persistence import store_invocation_logger

if TYPE_CHECKING:
    from campaigns.memory import MemoryStore

__all__ = ["builtin_servers_for", "open_table"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


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
    from bot.table.assembly.memory import open_memory
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
        tts = tts or voices(config.providers.tts, inference)
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
        host.follow_session(lambda: session_ref[0].recorder.session_id if session_ref else None)
        await stack.enter_async_context(host)

        def tell_dm(reason: str | None, message: str) -> None:
            for session in session_ref:
                session.trouble.part_changed("llm_server", reason, message)

        engines_ref: list[Engines] = []
        meter = spend_meter(config, lambda: engines_ref[0] if engines_ref else None, session_ref)
        engines = await open_engines(
            config,
            host,
            stack,
            base_url=llm_base_url,
            say=say,
            npcs=campaign.npcs.values(),
            on_server_change=tell_dm,
            pool=inference,
        )
        engines_ref.append(engines)
        attach_meter(meter, config, stt=stt, tts=tts, engines=engines)
        attach_memory_meter(meter, config, memory)
        session = build_session(
            config=config,
            campaign=campaign,
            stt=stt,
            tts=tts,
            engines=engines.for_npc,
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
        session.spend = meter
        session.warm_up = engines.warm_up
        session_ref.append(session)
        context.session_id = None
        await session.start()
        context.session_id = session.recorder.session_id
        stack.push_async_callback(meter.aclose)  # after the session: its last calls are kept
        stack.push_async_callback(_embedded, memory)  # the night's last embeddings are priced
        await meter.resume(memory, session.recorder.session_id)  # a resumed night continues
        stack.push_async_callback(session.stop)
        yield session


async def _embedded(memory: MemoryStore, timeout_s: float = 10.0) -> None:
    """Let the session's last chunks finish embedding (within ``timeout_s``) before the spend
    meter writes its last totals; what is still running then is finished when memory closes."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(memory.wait_idle(), timeout_s)


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
