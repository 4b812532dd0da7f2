"""L2 recall with embeddings and LLM session summaries, over the real ``openai`` SDK talking to a
local server that speaks the OpenAI wire protocol (see conftest)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from openai import AsyncOpenAI

from campaigns.memory import LlmSummarizer, MemoryStore, OpenAIEmbeddings
from campaigns.providers.openai_client import openai_client

if TYPE_CHECKING:
    from tests.memory.conftest import OpenAIStub

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns/example"
LINES = [
    "Welcome to the Rusty Flagon, travellers.",
    "Bartok pours a dark ale for the ranger.",
    "The halfling orders another round of mead.",
    "Greymantle mutters about the catacombs under the temple.",
    "Nobody has entered the catacombs in a century.",
    "Vessa warns the party to stay out of the ruins.",
]


async def _session(store: MemoryStore) -> str:
    session = await store.start_session("emberford", "Recall")
    for i, line in enumerate(LINES):
        await store.add_utterance(session, "Narrator", line, started_at=i, ended_at=i + 1)
    await store.end_session(session)
    return session


@pytest.fixture
def embeddings(openai_stub: OpenAIStub) -> OpenAIEmbeddings:
    client = openai_client("test-key", openai_stub.base_url, timeout_s=10.0, max_retries=1)
    return OpenAIEmbeddings(client, model="concepts", owns_client=True)


async def test_hybrid_search_finds_synonyms_full_text_misses(
    memory_url: str, embeddings: OpenAIEmbeddings, openai_stub: OpenAIStub
) -> None:
    store = await MemoryStore.open(memory_url, embeddings=embeddings, chunk_utterances=3)
    try:
        await _session(store)
        await store.wait_idle()
        embedded = [body for path, body in openai_stub.requests if path.endswith("/embeddings")]
        assert sum(len(body["input"]) for body in embedded) == 2  # two chunks of 3
        # "beer" and "tomb" appear nowhere in the transcript: only vectors can find them.
        [drink, *_] = await store.search_facts("beer", top_k=3)
        assert "dark ale" in drink["text"] and drink["matched"] == ["vector"]
        [tomb, *_] = await store.search_facts("a tomb under the temple", top_k=3)
        assert "catacombs" in tomb["text"] and set(tomb["matched"]) == {"fulltext", "vector"}
        # The endpoint going down degrades to full text instead of failing the tool call.
        openai_stub.fail_embeddings = True
        [textual] = await store.search_facts("catacombs", top_k=1)
        assert textual["matched"] == ["fulltext"] and "catacombs" in textual["text"]
        assert await store.search_facts("beer") == []
    finally:
        await store.close()


async def test_chunks_embedded_while_endpoint_was_down_are_backfilled(
    memory_url: str, embeddings: OpenAIEmbeddings, openai_stub: OpenAIStub
) -> None:
    openai_stub.fail_embeddings = True
    store = await MemoryStore.open(memory_url, embeddings=embeddings, chunk_utterances=3)
    await _session(store)
    await store.wait_idle()
    await store.close()
    openai_stub.fail_embeddings = False
    store = await MemoryStore.open(memory_url, embeddings=embeddings, chunk_utterances=3)
    try:
        await store.wait_idle()  # open() backfills in the background
        [drink, *_] = await store.search_facts("beer", top_k=3)
        assert "dark ale" in drink["text"]
    finally:
        await store.close()
    assert "test-key" not in repr(embeddings)


async def test_session_summary_comes_from_the_llm(memory_url: str, openai_stub: OpenAIStub) -> None:
    client = AsyncOpenAI(base_url=openai_stub.base_url, api_key="k", max_retries=0)
    store = await MemoryStore.open(memory_url, summarizer=LlmSummarizer(client, "tiny"))
    try:
        session = await _session(store)
        summary = await store.session_summary(session)
        assert summary["summary"] == openai_stub.summary_text
        assert summary["summary_source"] == "llm"
        [(_, request)] = [r for r in openai_stub.requests if r[0].endswith("/chat/completions")]
        assert request["model"] == "tiny" and "catacombs" in request["messages"][1]["content"]
        assert "Black Candle" in await store.recap(1)
    finally:
        await store.close()
        await client.close()


async def test_llm_failure_falls_back_to_extractive_summary(
    memory_url: str, openai_stub: OpenAIStub, caplog: pytest.LogCaptureFixture
) -> None:
    openai_stub.fail_chat = True
    client = AsyncOpenAI(base_url=openai_stub.base_url, api_key="k", max_retries=0)
    store = await MemoryStore.open(memory_url, summarizer=LlmSummarizer(client, "tiny"))
    try:
        with caplog.at_level(logging.WARNING, logger="campaigns.memory.store"):
            session = await _session(store)
        summary = await store.session_summary(session)
        assert summary["summary_source"] == "extractive"
        assert "catacombs" in summary["summary"]
        assert "extractive" in caplog.text
    finally:
        await store.close()
        await client.close()


async def test_open_memory_wires_config_providers_and_seeds_entities(
    tmp_path, openai_stub: OpenAIStub
) -> None:
    from bot.settings.config import GlyphoxaConfig
    from bot.table.assembly.memory import open_memory
    from campaigns.basics import Tier

    config = GlyphoxaConfig.model_validate(
        {
            "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'm.db'}", "chunk_utterances": 3},
            "campaign": {"path": str(EXAMPLE)},
            "providers": {
                "llm": {"name": "openai", "model": "tiny", "base_url": openai_stub.base_url,
                        "api_key": "secret-llm"},
                "embeddings": {"name": "openai", "model": "concepts",
                               "base_url": openai_stub.base_url},
            },
        }
    )  # fmt: skip
    store = await open_memory(config)
    try:
        assert (await store.query_entities("Bartok"))[0]["id"] == "bartok"
        session = await store.start_session("emberford")
        await store.add_utterance(session, "Bartok", LINES[1], npc="Bartok", started_at=0,
                                  ended_at=1, tier=Tier.FAST)  # fmt: skip
        await store.end_session(session)
        await store.wait_idle()
        [hit] = await store.search_sessions("ranger")
        assert hit["tier"] == "fast"
        assert (await store.session_summary(session))["summary_source"] == "llm"
        [drink, *_] = await store.search_facts("beer")
        assert "dark ale" in drink["text"]
    finally:
        await store.close()


async def test_the_memorys_own_model_calls_are_priced_for_the_night(
    tmp_path, openai_stub: OpenAIStub
) -> None:
    """The session's summary (priced as the LLM's model) and the chunks' embeddings (priced
    under ``pricing.embeddings``) report to the table's spend meter as the campaign memory's
    own cost; a server that reports no usage (this summary) is estimated, and says so."""
    from bot.settings.config import GlyphoxaConfig
    from bot.table.assembly.memory import open_memory
    from bot.table.assembly.spend import attach_memory_meter
    from bot.table.session.spend import SpendMeter

    config = GlyphoxaConfig.model_validate(
        {
            "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'm.db'}", "chunk_utterances": 3},
            "campaign": {"path": str(EXAMPLE)},
            "providers": {
                "llm": {"name": "openai", "model": "tiny", "base_url": openai_stub.base_url},
                "embeddings": {"name": "openai", "model": "concepts",
                               "base_url": openai_stub.base_url},
            },
            "pricing": {
                "llm": {"tiny": {"input_per_million": 1e6, "output_per_million": 2e6}},
                "embeddings": {"concepts": {"input_per_million": 5e5}},
            },
        }
    )  # fmt: skip
    meter = SpendMeter(config.pricing, config.session.spend)
    store = await open_memory(config)
    try:
        attach_memory_meter(meter, config, store)
        await _session(store)
        await store.wait_idle()
    finally:
        await store.close()
    night = meter.summary()
    assert night["npcs"] == {"campaign memory": pytest.approx(night["total_usd"])}
    assert "memory search concepts" in night["providers"] and night["estimated"]
    llm = meter.rows[("llm", "tiny", "")]
    assert llm.calls == 1 and llm.estimated_calls == 1 and llm.input_tokens > 0
    assert llm.cost_usd == pytest.approx(llm.input_tokens * 1.0 + llm.output_tokens * 2.0)
    embedded = [body for path, body in openai_stub.requests if path.endswith("/embeddings")]
    emb = meter.rows[("embeddings", "concepts", "")]
    assert emb.calls == len(embedded) > 0 and emb.estimated_calls == 0
    assert emb.input_tokens == len(embedded)  # the server reports 1 token a request
    assert emb.cost_usd == pytest.approx(0.5 * len(embedded))
