"""The table's spend meter, wired to every provider that costs money and to the DM.

``open_table`` builds one :class:`~bot.table.session.spend.SpendMeter` per table from ``pricing``
and ``session.spend``, gives each remote provider (the LLM, the realtime engine, OpenAI-compatible
voices and speech recognition) its sink (a local model's sink is free), and turns the limits
into what the DM sees: the soft limit as one notice, the hard limit as the switch of every NPC
to ``session.spend.fallback``'s model (or to FAST turns) with a notice saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bot.audio.speech import OpenAiStt, SttProvider, TtsProvider, VoiceRouter
from bot.audio.speech.tts_openai import OpenAiTts
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.engines import Engines
from bot.table.session.session import TableSession
from bot.table.session.spend import SpendMeter
from campaigns.basics import Tier
from campaigns.memory import LlmSummarizer, MemoryStore, OpenAIEmbeddings
from campaigns.providers.usage import Service, Usage
from npcs.engines import CascadedEngine, RealtimeEngine

__all__ = ["attach_memory_meter", "attach_meter", "runs_here", "spend_meter"]

log = logging.getLogger(__name__)


def spend_meter(
    config: GlyphoxaConfig, engines: Callable[[], Engines | None], session: list[TableSession]
) -> SpendMeter:
    """The meter, telling the DM through ``session`` (filled once the session exists) and
    switching ``engines`` at the hard limit."""

    def tell(key: str) -> Callable[[str], None]:
        def say(message: str) -> None:
            log.warning("%s", message)
            for table in session:
                table.trouble.tell(key, message)

        return say

    def hard(message: str) -> None:
        spend = config.session.spend
        built = engines()
        if spend.on_hard == "fallback" and built is not None and built.fallback is not None:
            built.switched = True
            what = f"every NPC now answers through {built.fallback_model}"
        else:
            for table in session:
                table.controls.set_tier_override(Tier.FAST)
            what = "every NPC now answers at the FAST tier (/tier auto lifts it)"
        tell("spend:hard")(
            f"{message} (session.spend.hard): {what}; voices and speech recognition keep "
            "their providers"
        )

    return SpendMeter(
        config.pricing,
        config.session.spend,
        on_soft=tell("spend:soft"),
        on_hard=hard,
        on_unpriced=tell("spend:unpriced"),
    )


def attach_meter(
    meter: SpendMeter,
    config: GlyphoxaConfig,
    *,
    stt: SttProvider,
    tts: TtsProvider,
    engines: Engines,
) -> None:
    """Give every provider that reports usage its sink: free for a local LLM (``name:
    local``), priced for everything remote."""
    if isinstance(stt, OpenAiStt):
        stt.meter = meter.sink(free=_free(meter, "stt", config.providers.stt))
    if isinstance(tts, VoiceRouter):
        for voice in tts.providers.values():
            if isinstance(voice, OpenAiTts):
                voice.meter = meter.sink(free=_free(meter, "tts", config.providers.tts))
    llm_free = _free(meter, "llm", config.providers.llm)
    fallback = config.session.spend.fallback
    for engine in engines.engines():
        if engine is engines.fallback and isinstance(engine, CascadedEngine):
            engine.meter = meter.sink(free=fallback is not None and _free(meter, "llm", fallback))
        elif isinstance(engine, CascadedEngine):
            engine.meter = meter.sink(free=llm_free)
        elif isinstance(engine, RealtimeEngine):
            engine.meter = meter.sink(free=False)


def attach_memory_meter(meter: SpendMeter, config: GlyphoxaConfig, memory: MemoryStore) -> None:
    """The campaign memory's own model calls report to ``meter`` too: the session's summary
    (priced as ``providers.llm``'s model) and search embeddings (``pricing.embeddings``)."""
    summarizer = memory.summarizer
    if isinstance(summarizer, LlmSummarizer):
        free = _free(meter, "llm", config.providers.llm)
        summarizer.on_usage = _memory_calls(meter, "llm", summarizer.model, free)
    embedder = memory.embeddings
    if isinstance(embedder, OpenAIEmbeddings):
        free = _free(meter, "embeddings", config.providers.embeddings)
        embedder.on_usage = _memory_calls(meter, "embeddings", embedder.model, free)


def _memory_calls(
    meter: SpendMeter, service: Service, model: str, free: bool
) -> Callable[[int, int, bool], None]:
    """Records the campaign memory's own calls, which serve no NPC."""

    def record(input_tokens: int, output_tokens: int, estimated: bool) -> None:
        usage = Usage(service, model, None, input_tokens, output_tokens, estimated=estimated)
        meter.record(usage, free=free)

    return record


def runs_here(provider: Any) -> bool:
    """A model that costs nothing per call: the bundled one (``name: local``) or any server on
    this machine (a ``base_url`` on localhost: Ollama, a llama.cpp or vLLM server, a local
    speech server). A server elsewhere is priced; one that is free too can be given a price of
    0 under ``pricing``."""
    if getattr(provider, "name", "") == "local":
        return True
    url = getattr(provider, "base_url", None)
    host = (urlsplit(str(url)).hostname or "") if url else ""
    return host == "localhost" or host == "::1" or host.startswith("127.")


def _free(meter: SpendMeter, service: str, provider: Any) -> bool:
    """Whether ``provider``'s calls cost nothing: it runs here and ``pricing`` names no price
    for its model (a price the DM wrote counts even for a server on this machine)."""
    if getattr(provider, "name", "") == "local":
        return True
    prices = getattr(meter.prices, service, {})
    return runs_here(provider) and getattr(provider, "model", None) not in prices
