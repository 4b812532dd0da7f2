"""Can each configured model service be reached? Asked in seconds, before a table starts.

``glyphoxa rehearse`` and ``glyphoxa run`` ask these first (``bot.frontends.doctor.preflight``), so
a model server that is not there stops them at once with a doctor line instead of failing every
turn of a scene or every player's line at the table. A check here is shallow on purpose: a
remote server (``openai``, or ``local`` with a ``base_url``) must answer an HTTP request
(``GET /models``; any answer but a refused key or a server error will do) within
``REACH_TIMEOUT_S``; a local model must be installed where it is looked for. ``glyphoxa doctor``
runs each part for real.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.frontends.doctor.runner import Check, DoctorContext, Problem, Skip
from bot.settings.providers import ProviderConfig

__all__ = ["REACH_CHECKS", "REACH_TIMEOUT_S", "reach_server"]

REACH_TIMEOUT_S = 5.0
"""The longest wait for a server's answer (3 s of it for the connection)."""

_OPENAI = "https://api.openai.com/v1"


async def reach_server(provider: ProviderConfig, key: str, what: str) -> str:
    """``GET /models`` at the provider's server; a Problem naming the URL, the config key
    (``providers.llm``) and the fix when it cannot be reached or refuses the key."""
    import httpx
    import openai

    from campaigns.providers.openai_client import openai_client

    url = (provider.base_url or _OPENAI).rstrip("/")
    timeout = httpx.Timeout(REACH_TIMEOUT_S, connect=3.0)
    client = openai_client(provider.api_key, provider.base_url, timeout_s=timeout, max_retries=0)
    where = f"{key}.base_url" if provider.base_url else f"{key}.base_url (empty: OpenAI's API)"
    runs = f"check {where} and that the server runs"
    try:
        await client.models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        raise Problem(
            f"{what} at {url} refused the key ({error.status_code})", f"check {key}.api_key"
        ) from None
    except openai.APIStatusError as error:
        if error.status_code >= 500:
            raise Problem(f"{what} at {url} answered {error.status_code}", runs) from None
    except openai.APITimeoutError:
        raise Problem(
            f"{what} at {url} did not answer within {REACH_TIMEOUT_S:g} s", runs
        ) from None
    except openai.APIConnectionError:
        raise Problem(f"{what} unreachable at {url}", runs) from None
    finally:
        await client.close()
    return f"{what} at {url}: reachable"


def _remote(provider: ProviderConfig, local_name: str) -> bool:
    return provider.name != local_name or provider.base_url is not None


async def reach_llm(context: DoctorContext) -> str:
    """``providers.llm``: its server answers, or the bundled llama.cpp and its model are there
    (the server itself starts with the table)."""
    llm = context.config.providers.llm
    if _remote(llm, "local"):
        return await reach_server(llm, "providers.llm", "LLM server")
    from campaigns.basics import GlyphoxaError
    from npcs.inference.server import find_smollm2_gguf, llama_cpp_available

    if not llama_cpp_available():
        raise Problem(
            "the bundled LLM needs llama-cpp-python, which is not installed",
            "run ./scripts/setup, or set providers.llm to a server (name: openai, base_url)",
        )
    written = llm.options.model_path

    def model_file() -> Path:
        return Path(written).expanduser() if written else find_smollm2_gguf()

    try:
        model = await asyncio.to_thread(model_file)
    except GlyphoxaError as error:
        raise Problem(str(error), "run ./scripts/setup") from None
    if not await asyncio.to_thread(model.is_file):
        raise Problem(f"LLM model file not found: {model}", "fix providers.llm.options.model_path")
    return f"bundled llama.cpp with {model.name}: installed"


async def reach_fallback(context: DoctorContext) -> str:
    """``session.spend.fallback``: the model the table switches to at the spending limit."""
    fallback = context.config.session.spend.fallback
    if fallback is None:
        raise Skip("no spend fallback configured")
    if not _remote(fallback, "local"):
        return "the bundled llama.cpp (checked with providers.llm)"
    return await reach_server(fallback, "session.spend.fallback", "fallback LLM server")


async def reach_stt(context: DoctorContext) -> str:
    """``providers.stt``: its server answers, or the Whisper model is installed here."""
    stt = context.config.providers.stt
    if stt.name == "openai":
        return await reach_server(stt, "providers.stt", "speech recognition server")
    from bot.audio.speech.stt_whisper import resolve_whisper_model
    from campaigns.basics import GlyphoxaError

    try:
        path = await asyncio.to_thread(resolve_whisper_model, stt.model)
    except GlyphoxaError as error:
        raise Problem(
            str(error), "check providers.stt.model; ./scripts/setup installs tiny.en"
        ) from None
    return f"faster-whisper model {path.name}: installed"


async def reach_tts(context: DoctorContext) -> str:
    """``providers.tts``: its speech server answers (local voices are checked with the
    campaign: every NPC's voice must be installed)."""
    tts = context.config.providers.tts
    if tts.name != "openai":
        raise Skip(f"{tts.name} speaks on this machine (the campaign check found its voices)")
    return await reach_server(tts, "providers.tts", "speech server")


async def reach_embeddings(context: DoctorContext) -> str:
    embeddings = context.config.providers.embeddings
    if embeddings is None:
        raise Skip("not configured (memory search by keywords)")
    return await reach_server(embeddings, "providers.embeddings", "embeddings server")


async def reach_realtime(context: DoctorContext) -> str:
    realtime = context.config.providers.realtime
    if realtime is None:
        raise Skip("not configured")
    return await reach_server(realtime, "providers.realtime", "realtime server")


#: One check per service, each within a few seconds; they run side by side.
REACH_CHECKS = (
    Check("llm", reach_llm, timeout_s=REACH_TIMEOUT_S + 5),
    Check("stt", reach_stt, timeout_s=REACH_TIMEOUT_S + 5),
    Check("tts", reach_tts, timeout_s=REACH_TIMEOUT_S + 5),
    Check("embeddings", reach_embeddings, timeout_s=REACH_TIMEOUT_S + 5),
    Check("realtime", reach_realtime, timeout_s=REACH_TIMEOUT_S + 5),
    Check("spend-fallback", reach_fallback, timeout_s=REACH_TIMEOUT_S + 5),
)
