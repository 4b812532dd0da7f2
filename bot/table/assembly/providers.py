"""The table's model clients from ``providers``: speech recognition, voices, the LLM's client
and the bundled LLM server, each built one way for ``run``, ``rehearse``, the benches, the
doctor and the CLI's chat."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.audio.speech import FasterWhisperStt, OpenAiStt, SttProvider, VoiceRouter
from bot.settings.providers import LlmProvider
from bot.settings.providers import SttProvider as SttSection
from bot.settings.providers import TtsProvider as TtsSection
from campaigns.basics import GlyphoxaError
from campaigns.providers.openai_client import openai_client
from npcs.inference.pools import InferencePool

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from npcs.inference.server import LocalLlmServer

__all__ = ["llm_client", "load_stt", "local_llm_server", "voices"]

log = logging.getLogger(__name__)

#: The LLM's per-request timeout when ``options.timeout_s`` is empty and no pool applies.
LLM_TIMEOUT_S = 60.0


async def load_stt(provider: SttSection, pool: InferencePool | None = None) -> SttProvider:
    """The configured recognizer, loaded off the event loop; a remote one goes through
    ``pool`` (pooled connections, this table's request limit, retries)."""
    if provider.name == "faster-whisper":
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


def voices(tts: TtsSection, pool: InferencePool) -> VoiceRouter:
    """The NPCs' voices; an OpenAI-compatible speech server goes through ``pool``."""
    remote = pool.for_provider("tts", tts) if tts.name == "openai" else None
    return VoiceRouter.from_config(tts, client=remote)


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


def llm_client(
    llm: LlmProvider, *, base_url: str | None = None, pool: InferencePool | None = None
) -> AsyncOpenAI:
    """The LLM's client: through ``pool`` for an inference server (pooled, limited per table,
    retried on 429/5xx), else a client that fails at once (the supervised bundled server, or
    no pool), with ``options.timeout_s``. ``base_url`` overrides (the bundled server's)."""
    if pool is not None:
        return pool.for_provider("llm", llm, base_url=base_url)
    timeout = llm.options.timeout_s if llm.options.timeout_s is not None else LLM_TIMEOUT_S
    return openai_client(llm.api_key, base_url or llm.base_url, timeout_s=timeout, max_retries=0)
