"""Table actions, spoken budgets and clean speech through the cascaded engine, with the real
dice and memory tool servers, a real SQLite campaign memory seeded with the example campaign,
and a scripted OpenAI-compatible server (the model's words are the script's)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from campaigns.basics import Tier
from campaigns.content import EntitiesFile, ToolApproval
from campaigns.memory import MemoryStore
from campaigns.yamlio import load_model
from npcs.context import SceneLine
from npcs.engines import CascadedEngine, FirstToken, Sentence, ToolsUsed, TurnDone, TurnRequest
from npcs.engines.cascaded_round import said_before
from npcs.engines.sentence_cascade import SentenceCascadeEngine
from npcs.schema import NpcDefinition, SpokenBudgetWords
from tools.builtin import dice, memory
from tools.host import ToolHost
from tools.host.approval import ApprovalDecision, ApprovalRequest
from tools.spec import ToolContext

from .npcs_fake_openai import FakeOpenAI, Step

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


@pytest.fixture
async def table_host(tmp_path: Path) -> AsyncIterator[ToolHost]:
    """The real dice and memory servers over a campaign memory seeded with the example."""
    store = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    await store.seed_entities(load_model(EXAMPLE / "entities.yaml", EntitiesFile).unwrap())
    context = ToolContext(campaign_dir=EXAMPLE, memory=store)
    try:
        async with ToolHost(
            builtins=[dice.create_server(context), memory.create_server(context)]
        ) as host:
            yield host
    finally:
        await store.close()


def barkeep(**changes: Any) -> NpcDefinition:
    npc = NpcDefinition(
        name="Bartok",
        aliases=["Bart"],
        personality="A gruff dwarf barkeep.",
        budget_tier="fast",
        tools=["roll", "query_entities"],
        fallback_lines=["Hmph. Ask me again, lad."],
    )
    return npc.model_copy(update=changes)


def sage() -> NpcDefinition:
    return NpcDefinition(
        name="Greymantle",
        personality="An elderly sage.",
        budget_tier="deep",
        tools=["search_facts", "search_sessions", "query_entities", "roll"],
    )


async def collect(engine: Any, request: TurnRequest) -> list[object]:
    async with contextlib.aclosing(engine.respond(request)) as events:
        return [event async for event in events]


def engine_for(server: FakeOpenAI, host: ToolHost, **options: Any) -> CascadedEngine:
    client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return CascadedEngine(client, model="scripted", host=host, **options)


def spoken(events: list[object]) -> list[str]:
    return [e.text for e in events if isinstance(e, Sentence)]


def said(events: list[object]) -> str:
    """The answer as heard (its first piece may end at a comma: the voice starts sooner)."""
    return " ".join(spoken(events))


def tools_run(events: list[object]) -> list[tuple[str, Any]]:
    return [
        (
            result.name,
            json.loads(result.arguments) if isinstance(result.arguments, str) else result.arguments,
        )
        for event in events
        if isinstance(event, ToolsUsed)
        for result in event.report.results
    ]


async def test_a_roll_asked_for_runs_the_dice_and_the_number_opens_the_answer(
    table_host: ToolHost,
) -> None:
    """The model (here it says a wrong number) is never asked to roll: the table rolls 2d6+3,
    the NPC says the total first, and a line naming another number is dropped."""
    script = [Step(content="You rolled a 99! Luck favours the bold.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(barkeep(), "Arin", "Bartok, roll 2d6+3 for me.", Tier.FAST)
        events = await asyncio.wait_for(collect(engine_for(server, table_host), request), 20)
    [(name, arguments)] = tools_run(events)
    assert (name, arguments) == ("roll", {"expression": "2d6+3"})
    [used] = [e for e in events if isinstance(e, ToolsUsed)]
    total = json.loads(used.report.results[0].content)["total"]
    assert 5 <= total <= 15
    assert isinstance(events[0], ToolsUsed) and isinstance(events[1], FirstToken)
    assert spoken(events) == [f"{total} on 2d6+3.", "Luck favours the bold."]
    [request_body] = server.requests
    assert "roll" not in [t["function"]["name"] for t in request_body.get("tools", [])]
    assert f"said the result, {total}" in request_body["messages"][-1]["content"]
    done = events[-1]
    assert isinstance(done, TurnDone) and dict(done.repairs) == {"contradicts the roll": 1}


async def test_a_roll_the_dm_refuses_is_told_to_the_model_and_no_number_is_said(
    table_host: ToolHost,
) -> None:
    """The table's roll waits for the DM, who refuses: nothing rolls, the model is not offered
    the dice, and it is told why, so it neither invents a number nor rolls on its own."""

    async def dm(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("denied", by="Dana")

    npc = barkeep(approval=ToolApproval(tools={"roll": "always_ask"}))
    table_host.approvals.configure(rules_for=lambda _name: npc.approval, approver=dm)
    script = [Step(content="No dice tonight, lad. The DM says so.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(npc, "Arin", "Bartok, roll a d20 for me.", Tier.FAST)
        events = await asyncio.wait_for(collect(engine_for(server, table_host), request), 20)
    [used] = [e for e in events if isinstance(e, ToolsUsed)]
    assert (used.report.results[0].status, used.report.results[0].approval) == (
        "refused", "denied by Dana",
    )  # fmt: skip
    [body] = server.requests
    assert "roll" not in [t["function"]["name"] for t in body.get("tools", [])]
    told = body["messages"][-1]["content"]
    assert "roll did not happen" in told and "the DM refused it" in told
    assert spoken(events) == ["No dice tonight, lad.", "The DM says so."]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Roll for initiative, Bartok!", ("1d20", "for initiative.")),
        ("Bart, roll a d20.", ("1d20", "That's a")),
        ("Roll a die for me, Bartok.", ("1d20", "That's a")),
    ],
)
async def test_every_way_of_asking_for_a_roll_rolls(
    table_host: ToolHost, line: str, expected: tuple[str, str]
) -> None:
    async with FakeOpenAI([Step(content="Not bad.")]) as server:
        request = TurnRequest(barkeep(), "Arin", line, Tier.FAST)
        events = await asyncio.wait_for(collect(engine_for(server, table_host), request), 20)
    assert tools_run(events) == [("roll", {"expression": expected[0]})]
    assert expected[1] in spoken(events)[0]


async def test_no_roll_without_a_request_or_without_the_dice_tool(table_host: ToolHost) -> None:
    async with FakeOpenAI(lambda body: Step(content="Hold your horses.")) as server:
        engine = engine_for(server, table_host)
        held = await collect(engine, TurnRequest(barkeep(), "Arin", "Don't roll yet.", Tier.FAST))
        no_dice = barkeep(tools=["query_entities"])
        asked = TurnRequest(no_dice, "Arin", "Roll a d20, Bartok.", Tier.FAST)
        refused = await collect(engine, asked)
    assert tools_run(held) == [] and spoken(held) == ["Hold your horses."]
    assert tools_run(refused) == []  # not on the whitelist: the table never rolls for it


async def test_a_world_question_at_deep_searches_memory_before_the_model(
    table_host: ToolHost,
) -> None:
    """Retrieval first: both searches run before the first request, and the Old Mill's own
    description is in that request's prompt."""
    async with FakeOpenAI([Step(content="The mill grinds at night, they say.")]) as server:
        request = TurnRequest(
            sage(), "Tobble", "Greymantle, what happened at the old mill?", Tier.DEEP
        )
        events = await asyncio.wait_for(collect(engine_for(server, table_host), request), 20)
    assert tools_run(events) == [
        ("search_facts", {"query": "old mill"}),
        ("search_sessions", {"query": "old mill"}),
    ]
    assert isinstance(events[0], ToolsUsed)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "What you recall about this" in prompt
    assert "The Old Mill — An abandoned mill on the river that grinds at night." in prompt
    assert said(events) == "The mill grinds at night, they say."


async def test_a_fast_line_searches_nothing(table_host: ToolHost) -> None:
    async with FakeOpenAI([Step(content="Ask the sage.")]) as server:
        request = TurnRequest(sage(), "Tobble", "What happened at the old mill?", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    assert tools_run(events) == []


async def test_an_answer_is_cut_at_its_budget_on_a_sentence_boundary(
    table_host: ToolHost,
) -> None:
    long = " ".join(f"Sentence number {n} is {n} more of the tale." for n in range(40))
    async with FakeOpenAI([Step(content=long)]) as server:
        npc = barkeep(spoken_budget=SpokenBudgetWords(fast=25))
        request = TurnRequest(npc, "Arin", "Tell me a story.", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    heard = said(events)
    assert heard.startswith("Sentence number 0") and heard.endswith("more of the tale.")
    assert 10 <= len(heard.split()) <= 25
    done = events[-1]
    assert isinstance(done, TurnDone) and done.budget_hit and done.budget_words == 25
    assert server.requests[0]["max_tokens"] <= 2 * 25 + 16
    assert server.disconnected.is_set() or len(server.requests) == 1  # the rest never read


async def test_the_models_own_tool_calls_still_work(table_host: ToolHost) -> None:
    """A capable model calls query_entities itself: it runs as before, beside the table's."""
    script = [
        Step(tool_calls=[("query_entities", {"name": "Black Candle"})]),
        Step(content="Smugglers, the lot of them."),
    ]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(barkeep(), "Arin", "Who are the Black Candle?", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    assert tools_run(events) == [("query_entities", {"name": "Black Candle"})]
    assert spoken(events) == ["Smugglers, the lot of them."]


@pytest.mark.parametrize(
    ("written", "heard", "repair"),
    [
        ("Arin: Bartok, how much for the chain shirt? Fifty gold.", "Fifty gold.", "regenerated"),
        ("Bartok: Fifty gold for the shirt, lad. 🛡️", "Fifty gold for the shirt, lad.", "emoji"),
        ("How much for the chain shirt? Fifty gold, lad.", "Fifty gold, lad.", "echo"),
        ("**Fifty** gold. *spits on the floor*", "Fifty gold.", "markdown"),
    ],
)
async def test_clean_speech_repairs_what_the_model_wrote(
    table_host: ToolHost, written: str, heard: str, repair: str | None
) -> None:
    script = [Step(content=written), Step(content="Fifty gold.")]  # asked again: once
    async with FakeOpenAI(script) as server:
        request = TurnRequest(barkeep(), "Arin", "How much for the chain shirt?", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    assert said(events) == heard
    done = events[-1]
    assert isinstance(done, TurnDone) and done.repairs
    if repair is not None:
        assert repair in dict(done.repairs)


async def test_broken_character_is_generated_again_then_the_fallback_line(
    table_host: ToolHost,
) -> None:
    script = [Step(content="As an AI language model, I cannot pour ale."),
              Step(content="I am just an AI, friend.")]  # fmt: skip
    async with FakeOpenAI(script) as server:
        request = TurnRequest(barkeep(), "Arin", "A pint, please.", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    assert spoken(events) == ["Hmph. Ask me again, lad."]
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert dict(done.repairs) == {"broken character": 2, "regenerated": 1, "fallback": 1}
    assert len(server.requests) == 2


async def test_a_regenerated_answer_is_spoken_when_it_is_clean(table_host: ToolHost) -> None:
    script = [Step(content="Okay, I'll make it concise."), Step(content="Two copper a pint.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(barkeep(), "Arin", "A pint, please.", Tier.FAST)
        events = await collect(engine_for(server, table_host), request)
    assert spoken(events) == ["Two copper a pint."]
    assert dict(events[-1].repairs) == {"scaffolding": 1, "regenerated": 1}  # type: ignore[attr-defined]


async def test_the_sentence_cascade_opens_a_roll_with_its_number(table_host: ToolHost) -> None:
    def script(body: dict[str, Any]) -> Step:
        return Step(content="Ha! Not bad." if body["model"] == "strong" else "Let me see.")

    async with FakeOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        strong = CascadedEngine(client, model="strong", host=table_host)
        engine = SentenceCascadeEngine(strong, fast_model="fast")
        request = TurnRequest(barkeep(), "Arin", "Bartok, roll a d20.", Tier.FAST)
        events = await collect(engine, request)
    assert tools_run(events) == [("roll", {"expression": "1d20"})]
    said = spoken(events)
    assert said[0].startswith("That's a") and said[1:] == ["Ha!", "Not bad."]
    assert [body["model"] for body in server.requests] == ["strong"]  # no opener needed


async def test_a_realtime_npc_gets_the_roll_made_and_is_told_its_number(
    table_host: ToolHost,
) -> None:
    """Speech to speech: the table rolls before the model answers and tells it the total in
    the turn's context (its own voice says it)."""
    from npcs.engines.realtime import RealtimeEngine

    from .npcs_fake_realtime import FakeRealtime, Reply

    async with FakeRealtime(lambda received: Reply(transcript="Fourteen!")) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        engine = RealtimeEngine(client, model="gpt-realtime", host=table_host)
        request = TurnRequest(barkeep(), "Arin", "Bartok, roll a d20.", Tier.FAST)
        try:
            events = await collect(engine, request)
        finally:
            await engine.aclose()
    [(name, arguments)] = tools_run(events)
    assert (name, arguments) == ("roll", {"expression": "1d20"})
    [used] = [e for e in events if isinstance(e, ToolsUsed)]
    total = json.loads(used.report.results[0].content)["total"]
    items = [m["item"] for m in server.received if m["type"] == "conversation.item.create"]
    told = " ".join(str(part.get("text")) for item in items for part in item.get("content", []))
    assert f"the result is {total}. Say the number" in told


def test_asked_again_an_npc_may_answer_again() -> None:
    """Clean speech drops a copy of an earlier line, except the answer to the same words asked
    again (after a restart, or a player who did not hear it)."""
    scene = [
        SceneLine("Aria", "Bartok, what's on tap tonight?"),
        SceneLine("Bartok", "The dark ale is on tap tonight.", npc="Bartok"),
        SceneLine("Aria", "And a room?"),
        SceneLine("Bartok", "Two silver a night.", npc="Bartok"),
    ]
    again = TurnRequest(barkeep(), "Aria", "Bartok, what's on tap tonight?", Tier.FAST, scene)
    assert said_before(again) == ["Two silver a night."]
    other = TurnRequest(barkeep(), "Aria", "Anything else?", Tier.FAST, scene)
    assert said_before(other) == ["The dark ale is on tap tonight.", "Two silver a night."]
