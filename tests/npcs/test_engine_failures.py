"""Every engine's failure against a server that is not there names the URL, the config key and
the fix, in one line (the sentence cascade's opener said only "fast LLM request failed:
Connection error.")."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
from openai import AsyncOpenAI

from campaigns.basics import GlyphoxaError, Tier
from npcs.engines import CascadedEngine, RealtimeEngine, SentenceCascadeEngine, TurnRequest
from npcs.schema import NpcDefinition


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def failure(engine: object, npc: NpcDefinition) -> str:
    request = TurnRequest(npc, "Alice", "Hello there?", Tier.FAST)
    with pytest.raises(GlyphoxaError) as raised:
        async with contextlib.aclosing(engine.respond(request)) as events:  # type: ignore[attr-defined]
            async with asyncio.timeout(20):
                async for _event in events:
                    pass
    return str(raised.value)


def client_to_nowhere() -> tuple[AsyncOpenAI, str]:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    return AsyncOpenAI(base_url=url, api_key="k", max_retries=0), url


@pytest.mark.parametrize("kind", ["cascaded", "sentence_cascade"])
async def test_an_unreachable_llm_is_one_line_with_url_key_and_fix(
    kind: str, sage: NpcDefinition
) -> None:
    client, url = client_to_nowhere()
    strong = CascadedEngine(client, model="m")
    engine = strong if kind == "cascaded" else SentenceCascadeEngine(strong)
    message = await failure(engine, sage)
    assert "\n" not in message
    assert f"LLM server unreachable at {url}/" in message
    assert "providers.llm.base_url" in message and "glyphoxa doctor" in message
    await client.close()


async def test_an_unreachable_realtime_server_is_one_line_with_url_key_and_fix(
    sage: NpcDefinition,
) -> None:
    client, url = client_to_nowhere()
    engine = RealtimeEngine(client, model="gpt-realtime")
    try:
        message = await failure(engine, sage)
    finally:
        await engine.aclose()
        await client.close()
    assert "\n" not in message
    assert f"cannot reach the realtime API at {url}/ for Greymantle" in message
    assert "providers.realtime.base_url" in message and "glyphoxa doctor" in message
