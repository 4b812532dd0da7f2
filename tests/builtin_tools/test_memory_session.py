"""Memory and session-manager tools against the real campaign memory store (SQLite)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore
from tools.builtin import create_server
from tools.spec import ToolContext, ToolError

from .conftest import result_text, stdio_session

LINES = [
    ("Alice", "Bartok, what's on tap tonight?", None),
    ("Bartok", "Dwarven stout and a cursed cider.", "bartok"),
    ("Bob", "Tell me about the cursed cider", None),
    ("Bartok", "It came from the Shadowfell caravan.", "bartok"),
    ("Alice", "Who runs that caravan?", None),
    ("Bartok", "A woman called Mirelle.", "bartok"),
]


@dataclass
class SeededStore:
    url: str
    store: MemoryStore
    session_id: str


@pytest.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[SeededStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    store = await MemoryStore.open(url)
    await store.seed_entities(
        EntitiesFile.model_validate(
            {
                "entities": [
                    {"name": "Bartok", "type": "npc", "description": "Barkeep of the Flagon"},
                    {"name": "The Rusty Flagon", "type": "location"},
                ],
                "relations": [{"from": "bartok", "type": "works_at", "to": "the-rusty-flagon"}],
            }
        )
    )
    session_id = await store.start_session("example", "Session one")
    now = time.time()
    for i, (speaker, text, npc) in enumerate(LINES):
        await store.add_utterance(
            session_id, speaker, text, npc=npc, started_at=now + i, ended_at=now + i + 0.5
        )
    await store.end_session(session_id, summary="The party learned of the Shadowfell caravan.")
    await store.wait_idle()
    try:
        yield SeededStore(url, store, session_id)
    finally:
        await store.close()


async def test_memory_tools_in_process(seeded: SeededStore) -> None:
    ctx = ToolContext(memory=seeded.store)
    tools = {t.name: t for t in create_server("memory", ctx).tools}
    said = await tools["search_sessions"].handler(query="cursed cider")
    assert {r["speaker"] for r in said["results"]} == {"Bartok", "Bob"}
    scoped = await tools["search_sessions"].handler(query="cider", session_id=seeded.session_id)
    assert scoped["results"]
    entities = await tools["query_entities"].handler(type="location")
    assert [e["id"] for e in entities["results"]] == ["the-rusty-flagon"]
    summary = await tools["get_summary"].handler(entity_id="bartok")
    assert summary["relations"][0]["entity"]["id"] == "the-rusty-flagon"
    facts = await tools["search_facts"].handler(query="Shadowfell caravan", top_k=3)
    assert "Mirelle" in facts["results"][0]["text"]
    with pytest.raises(ToolError, match="no entity with id 'nobody'"):
        await tools["get_summary"].handler(entity_id="nobody")
    with pytest.raises(ToolError, match="type"):
        await tools["query_entities"].handler(type="dragon")
    with pytest.raises(ToolError, match="top_k"):
        await tools["search_facts"].handler(query="x", top_k=0)


async def test_session_tools_in_process(seeded: SeededStore) -> None:
    ctx = ToolContext(memory=seeded.store)
    tools = {t.name: t for t in create_server("session", ctx).tools}
    sessions = await tools["list_sessions"].handler()
    assert sessions["sessions"][0]["title"] == "Session one"
    latest = await tools["get_session_summary"].handler()
    assert latest["summary"] == "The party learned of the Shadowfell caravan."
    by_id = await tools["get_session_summary"].handler(session_id=seeded.session_id)
    assert by_id["npcs"] == ["bartok"]
    history = await tools["search_history"].handler(query="Shadowfell")
    assert history["results"][0]["session_id"] == seeded.session_id
    with pytest.raises(ToolError, match="unknown session"):
        await tools["get_session_summary"].handler(session_id="ffffffffffff")


async def test_without_store_the_error_is_clear() -> None:
    tools = {t.name: t for t in create_server("memory", ToolContext()).tools}
    with pytest.raises(ToolError, match="memory is not attached"):
        await tools["search_facts"].handler(query="x")
    session_tools = {t.name: t for t in create_server("session", ToolContext()).tools}
    with pytest.raises(ToolError, match="memory is not attached"):
        await session_tools["list_sessions"].handler()


async def test_memory_and_session_over_stdio(seeded: SeededStore) -> None:
    url = f"memory_url={seeded.url}"
    async with stdio_session("tools.builtin", "memory", "--set", url) as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        assert listing["query_entities"].meta["io.glyphoxa/latency"]["estimated_duration_ms"] <= 50
        assert listing["search_facts"].meta["io.glyphoxa/latency"]["estimated_duration_ms"] > 500
        found = await session.call_tool("query_entities", {"name": "bartok"})
        assert json.loads(result_text(found))["results"][0]["id"] == "bartok"
        said = await session.call_tool("search_sessions", {"query": "Mirelle"})
        assert "Mirelle" in result_text(said)
        bad = await session.call_tool("get_summary", {"entity_id": "nobody"})
        assert bad.is_error and "no entity" in result_text(bad)
    async with stdio_session("tools.builtin", "session", "--set", url) as session:
        listed = await session.call_tool("list_sessions", {})
        assert "Session one" in result_text(listed)
        history = await session.call_tool("search_history", {"query": "caravan"})
        assert seeded.session_id in result_text(history)
        wrong = await session.call_tool("search_history", {"query": ""})
        assert wrong.is_error and "query" in result_text(wrong)


async def test_null_optional_arguments_mean_left_out(seeded: SeededStore) -> None:
    tools = {t.name: t for t in create_server("memory", ToolContext(memory=seeded.store)).tools}
    said = await tools["search_sessions"].handler(query="cider", session_id=None, limit=None)
    assert said["results"]
    with pytest.raises(ToolError, match="missing argument"):
        await tools["search_sessions"].handler(query=None)
