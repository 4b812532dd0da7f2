"""The table's spend meter, wired to every provider that costs money and to the DM.

``open_table`` builds one :class:`~bot.session.spend.SpendMeter` per table from ``pricing`` and
``session.spend``, gives each remote provider (the LLM, the realtime engine, OpenAI-compatible
voices and speech recognition) its sink (a local model's sink is free), and turns the limits
into what the DM sees: the soft limit as one notice, the hard limit as the switch of every NPC
to ``session.spend.fallback``'s model (or to FAST turns) with a notice saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.assembly.engines import Engines
from bot.config import GlyphoxaConfig
from bot.session.session import TableSession
from bot.session.spend import SpendMeter
from bot.speech import OpenAiStt, SttProvider, TtsProvider, VoiceRouter
from bot.speech.tts_openai import OpenAiTts
from campaigns.basics import Tier
from npcs.engines import CascadedEngine, RealtimeEngine

__all__ = ["attach_meter", "spend_meter"]

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
                table.set_tier_override(Tier.FAST)
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
        stt.meter = meter.sink(free=False)
    if isinstance(tts, VoiceRouter):
        for voice in tts.providers.values():
            if isinstance(voice, OpenAiTts):
                voice.meter = meter.sink(free=False)
    llm_free = config.providers.llm.name == "local"
    fallback = config.session.spend.fallback
    for engine in engines.engines():
        if engine is engines.fallback and isinstance(engine, CascadedEngine):
            engine.meter = meter.sink(free=fallback is not None and fallback.name == "local")
        elif isinstance(engine, CascadedEngine):
            engine.meter = meter.sink(free=llm_free)
        elif isinstance(engine, RealtimeEngine):
            engine.meter = meter.sink(free=False)
