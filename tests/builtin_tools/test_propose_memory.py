"""``propose_memory``: an NPC's proposal goes through the real tool host (in-process and over MCP
stdio), waits for the DM, and only an approved fact reaches the NPCs' lookups and prompts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from bot.table.session.entities import EntityLookup
from campaigns.basics import Tier
from campaigns.content import CampaignApproval, EntitiesFile
from campaigns.memory import MemoryStore
from campaigns.yamlio import load_model
from npcs.campaign import load_campaign
from npcs.engines import CascadedEngine, ToolsUsed, TurnRequest
from npcs.schema import NpcDefinition
from tools.builtin import create_builtin_servers
from tools.caller import ToolCaller
from tools.config import McpConfig, McpServerConfig
from tools.host import ToolHost
from tools.host.approval import ApprovalDecision, ApprovalRequest
from tools.spec import ToolContext

from ..npcs.npcs_fake_openai import FakeOpenAI, Step
from .conftest import result_text, stdio_session

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns/example"
KEY = "Vessa hides a silver key under the third floorboard."
DRAGON = "Vessa is secretly a dragon."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    memory = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    await memory.seed_entities(load_model(EXAMPLE / "entities.yaml", EntitiesFile).unwrap())
    yield memory
    await memory.close()


def npc(name: str) -> NpcDefinition:
    return NpcDefinition(
        name=name, personality="A local.", budget_tier="standard", tools=["lore.*"]
    )


async def turn(host: ToolHost, who: NpcDefinition, script: list[Step]) -> tuple[Any, list[Any]]:
    """One NPC turn against a scripted OpenAI server; returns the report of the model's first
    tool round, and every request the engine sent."""
    seen: list[Any] = []
    async with FakeOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        engine = CascadedEngine(client, model="scripted", host=host)
        request = TurnRequest(who, "Arin", "What do you know about Vessa?", Tier.STANDARD)
        async with contextlib.aclosing(engine.respond(request)) as events:
            async for event in events:
                seen.append(event)
    # the model's own rounds (the table searched memory for the question first: table_ calls)
    used = [
        e
        for e in seen
        if isinstance(e, ToolsUsed)
        and not all(r.call_id.startswith("table_") for r in e.report.results)
    ]
    return used[0].report, server.requests


def stdio_memory(url: str) -> McpConfig:
    command = [sys.executable, "-m", "tools.builtin", "memory", "--set", f"memory_url={url}"]
    server = McpServerConfig(name="lore", transport="stdio", command=command, connect_timeout_s=90)
    return McpConfig(servers=[server])


@pytest.mark.timeout(240)  # the stdio server starts in a fresh Python on a shared machine
async def test_approved_proposal_reaches_the_npcs_and_a_rejected_one_never(
    store: MemoryStore, tmp_path: Path
) -> None:
    session = await store.start_session("emberford", "The key")
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    async with ToolHost(stdio_memory(url), autosave_s=0, persist=False) as host:
        assert await host.wait_for(lambda h: h.get_tool("propose_memory") is not None, 120)
        assert host.get_tool("propose_memory").tier == Tier.FAST  # type: ignore[union-attr]
        host.follow_session(lambda: session)
        for fact in (KEY, DRAGON):
            report, _ = await turn(
                host,
                npc("Bartok"),
                [
                    Step(tool_calls=[("propose_memory", {"entity": "Vessa", "fact": fact})]),
                    Step(content="I'll remember that."),
                ],
            )
            (result,) = report.results
            assert result.status == "ok", result.content
            assert json.loads(result.content)["status"] == "pending"
        waiting = await store.list_facts()
        assert [(f["npc"], f["entity_id"], f["session_id"]) for f in waiting] == [
            ("Bartok", "vessa", session),
            ("Bartok", "vessa", session),
        ]  # the host named the NPC and the session; the model never could
        lookup = EntityLookup(load_campaign(EXAMPLE), store, wait_s=10)
        before = await lookup.snapshot("Tell me about Captain Vessa")  # the prompt's facts
        assert before == "- Captain Vessa (npc): Captain of the Emberford Watch."

        await store.approve_fact(waiting[0]["id"], by="Dana (Discord)")
        await store.reject_fact(waiting[1]["id"], by="Dana (Discord)")
        await asyncio.sleep(1.1)  # the tool server's name lookups revalidate once a second

        report, requests = await turn(
            host,
            npc("Greymantle"),
            [
                Step(tool_calls=[("get_summary", {"entity_id": "vessa"})]),
                Step(tool_calls=[("query_entities", {"name": "Vessa"})]),
                Step(tool_calls=[("search_facts", {"query": "Vessa key dragon"})]),
                Step(content="Vessa keeps a key hidden."),
            ],
        )
        told = [m["content"] for r in requests for m in r["messages"] if m["role"] == "tool"]
        assert len(told) == 6  # each request resends the earlier results: 1 + 2 + 3
        for seen in told[-3:]:  # what the model read from get_summary, query_entities, search
            assert KEY in seen and "secretly" not in seen  # the rejected one, never
        lookup.forget()
        snapshot = await lookup.snapshot("Tell me about Captain Vessa")
        assert snapshot == f"- Captain Vessa (npc): Captain of the Emberford Watch. {KEY}"
        lookup.close()


async def test_in_process_the_host_names_the_caller_and_the_dm_may_be_asked(
    store: MemoryStore,
) -> None:
    context = ToolContext(memory=store, session_id="s-in-process")
    asked: list[ApprovalRequest] = []

    async def dm(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision("denied" if len(asked) == 1 else "approved", by="Dana")

    servers = create_builtin_servers(context, ["memory"])
    async with ToolHost(builtins=servers, autosave_s=0, persist=False) as host:
        args = {"entity": "bart", "fact": "Bartok waters the ale on Sundays."}
        result = await host.call(
            "propose_memory", args, whitelist=["*"], tier=Tier.FAST, npc="Whisper"
        )
        assert result.status == "ok", result.content
        [fact] = await store.list_facts()
        assert (fact["npc"], fact["entity_id"], fact["session_id"]) == (
            "Whisper", "bartok", "s-in-process"
        )  # fmt: skip
        bad = await host.call(
            "propose_memory", {"entity": "old", "fact": "It creaks."}, whitelist=["*"],
            tier=Tier.FAST, npc="Whisper",
        )  # fmt: skip
        assert (
            bad.is_error
            and "'old' could be" in bad.content
            and "give the entity's id" in bad.content
        )
        unknown = await host.call(
            "propose_memory", {"entity": "Mirelle", "fact": "She runs the caravan."},
            whitelist=["*"], tier=Tier.FAST, npc="Whisper",
        )  # fmt: skip
        assert unknown.is_error and "no entity named 'Mirelle'" in unknown.content
        long = await host.call(
            "propose_memory", {"entity": "bartok", "fact": "x" * 301}, whitelist=["*"],
            tier=Tier.FAST, npc="Whisper",
        )  # fmt: skip
        assert long.status == "invalid" and "fact" in long.content

        # With approval on, a side-effecting tool waits for the DM like any other (existing flow).
        host.approvals.configure(campaign=CampaignApproval(enabled=True), approver=dm)
        assert host.needs_approval("Whisper", ["propose_memory"])
        args = {"entity": "bartok", "fact": "Bartok hums when he lies."}
        denied = await host.call(
            "propose_memory", args, whitelist=["*"], tier=Tier.FAST, npc="Whisper"
        )
        assert denied.status == "refused" and len(await store.list_facts()) == 1
        approved = await host.call(
            "propose_memory", args, whitelist=["*"], tier=Tier.FAST, npc="Whisper"
        )
        assert approved.status == "ok" and approved.approval == "approved by Dana"
        assert [a.tool for a in asked] == ["propose_memory", "propose_memory"]
        assert len(await store.list_facts()) == 2  # still waiting for the review


async def test_over_stdio_the_caller_comes_from_the_request_meta(
    store: MemoryStore, tmp_path: Path
) -> None:
    url = f"memory_url=sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    args = {"entity": "Greymantle", "fact": "Greymantle once taught at the academy."}
    async with stdio_session("tools.builtin", "memory", "--set", url) as session:
        nobody = await session.call_tool("propose_memory", args)
        assert nobody.is_error and "does not say which NPC proposes" in result_text(nobody)
        meta: Any = ToolCaller("Whisper", "s-42").to_meta()
        named = await session.call_tool("propose_memory", args, meta=meta)
        assert not named.is_error, result_text(named)
        proposal = json.loads(result_text(named))
        assert proposal["entity"] == {"id": "greymantle", "name": "Greymantle"}
    [fact] = await store.list_facts()
    assert (fact["id"], fact["npc"], fact["session_id"]) == (
        proposal["proposal"],
        "Whisper",
        "s-42",
    )


def test_the_caller_in_meta_is_checked() -> None:
    assert ToolCaller.from_meta(None) is None
    assert ToolCaller.from_meta({"io.glyphoxa/caller": {"npc": ""}}) is None
    assert ToolCaller.from_meta({"io.glyphoxa/caller": {"npc": 3}}) is None
    assert ToolCaller.from_meta({"io.glyphoxa/caller": "Bartok"}) is None
    assert ToolCaller.from_meta({"io.glyphoxa/caller": {"npc": " Bartok ", "session_id": 9}}) == (
        ToolCaller("Bartok", None)
    )
