"""Cascaded engine against a scripted OpenAI-compatible SSE server and the real ToolHost."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from openai import AsyncOpenAI

from campaigns.basics import Tier
from npcs.engines import (
    CascadedEngine,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)

from .npcs_fake_openai import FakeOpenAI, Step


async def collect(engine: CascadedEngine, request: TurnRequest) -> list[object]:
    async with contextlib.aclosing(engine.respond(request)) as events:
        return [event async for event in events]


def engine_for(server: FakeOpenAI, host, **kwargs) -> CascadedEngine:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return CascadedEngine(client, model="scripted", host=host, **kwargs)


async def test_parallel_tool_calls_then_spoken_answer(host, sage, tool_log) -> None:
    script = [
        Step(tool_calls=[("gate_a", {}), ("gate_b", {})]),
        Step(content="Both gates are open. Mind the draft!"),
    ]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Open the gates, please.", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine_for(server, host), request), 10)

    assert isinstance(events[0], FirstToken)
    used = [e for e in events if isinstance(e, ToolsUsed)]
    assert len(used) == 1
    assert [r.status for r in used[0].report.results] == ["ok", "ok"]
    assert sorted(tool_log.calls) == ["gate_a", "gate_b"]
    assert [e.text for e in events if isinstance(e, Sentence)] == [
        "Both gates are open.",
        "Mind the draft!",
    ]
    assert not [e for e in events if isinstance(e, Filler)]
    assert isinstance(events[-1], TurnDone)
    assert events[-1].text == "Both gates are open. Mind the draft!"
    # The follow-up request carries the assistant tool calls and one tool message per call.
    follow_up = server.requests[1]["messages"]
    assistant = follow_up[-3]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["gate_a", "gate_b"]
    tool_messages = follow_up[-2:]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0_gate_a", "call_1_gate_b"]
    assert [m["content"] for m in tool_messages] == ["a open", "b open"]


async def test_tool_outside_whitelist_is_refused_and_the_llm_sees_why(host, sage, tool_log) -> None:
    script = [
        Step(tool_calls=[("open_vault", {})]),
        Step(content="I cannot open that vault."),
    ]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Bob", "Open the vault.", Tier.DEEP)
        events = await asyncio.wait_for(collect(engine_for(server, host), request), 10)

    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == {"roll_die", "gate_a", "gate_b", "consult_archive"}
    assert "open_vault" not in tool_log.calls
    used = next(e for e in events if isinstance(e, ToolsUsed))
    assert used.report.results[0].status == "refused"
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"].startswith("Error (refused): ")
    assert "not available" in tool_message["content"]
    assert [e.text for e in events if isinstance(e, Sentence)] == ["I cannot open that vault."]


async def test_tier_hides_slow_tools_from_the_llm(host, sage) -> None:
    async with FakeOpenAI([Step(content="Four.")]) as server:
        request = TurnRequest(sage, "Bob", "Roll.", Tier.FAST)
        await asyncio.wait_for(collect(engine_for(server, host), request), 10)
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == {"roll_die", "gate_a", "gate_b"}
    assert server.requests[0]["tool_choice"] == "auto"


async def test_slow_tool_triggers_filler_before_the_tool_runs(host, sage, tool_log) -> None:
    script = [
        Step(content="Ah.", tool_calls=[("consult_archive", {"topic": "Shadowfell"})]),
        Step(content="It began in 812."),
    ]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Research the Shadowfell.", Tier.STANDARD)
        order: list[object] = []
        async with contextlib.aclosing(engine_for(server, host).respond(request)) as events:
            async for event in events:
                order.append(event)
                if isinstance(event, Filler):
                    # The tool has not started yet when the filler is handed out.
                    assert not tool_log.archive_started.is_set()
                    tool_log.archive_release.set()
    kinds = [type(e).__name__ for e in order]
    assert kinds == ["FirstToken", "Sentence", "Filler", "ToolsUsed", "Sentence", "TurnDone"]
    assert order[2].text == "Let me consult my notes..."
    assert order[-1].text == "Ah. It began in 812."
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["content"] == "The archive says Shadowfell began in the year 812."


async def test_fast_tools_get_no_filler(host, sage) -> None:
    script = [Step(tool_calls=[("roll_die", {})]), Step(content="A four.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Roll for me.", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine_for(server, host), request), 10)
    assert not [e for e in events if isinstance(e, Filler)]


async def test_maximum_depth_forces_an_answer_without_tools(host, sage, tool_log) -> None:
    def script(body: dict) -> Step:
        if body.get("tools"):
            return Step(tool_calls=[("roll_die", {})])
        return Step(content="Enough rolling.")

    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host, max_depth=3)
        request = TurnRequest(sage, "Alice", "Keep rolling.", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine, request), 10)

    assert [bool(r.get("tools")) for r in server.requests] == [True, True, True, False]
    assert len([e for e in events if isinstance(e, ToolsUsed)]) == 3
    assert tool_log.calls == ["roll_die"] * 3
    assert (events[-1].text, events[-1].engine) == ("Enough rolling.", "cascaded")


async def test_first_sentence_is_emitted_while_the_stream_is_still_open(host, sage) -> None:
    release = asyncio.Event()
    script = [Step(content="Welcome, traveller. The ale is fresh.", hold_after="traveller. ")]
    script[0].release = release
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Hello!", Tier.FAST)
        async with contextlib.aclosing(engine_for(server, host).respond(request)) as events:
            first = await asyncio.wait_for(anext(events), 10)
            assert isinstance(first, FirstToken)
            sentence = await asyncio.wait_for(anext(events), 10)
            assert sentence == Sentence("Welcome, traveller.")
            assert not release.is_set()
            release.set()
            rest = [event async for event in events]
    assert rest[0] == Sentence("The ale is fresh.")


async def test_barge_in_speaks_nothing_more_and_stops_the_turn(host, sage, tool_log) -> None:
    script = [
        Step(tool_calls=[("consult_archive", {"topic": "war"})]),
        Step(content="This must never be spoken."),
    ]
    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host)
        request = TurnRequest(sage, "Alice", "Research the war.", Tier.STANDARD)
        seen: list[object] = []

        async def consume() -> None:
            async with contextlib.aclosing(engine.respond(request)) as events:
                async for event in events:
                    seen.append(event)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(tool_log.archive_started.wait(), 10)
        task.cancel()  # a player barges in while the slow tool runs
        with pytest.raises(asyncio.CancelledError):
            await task
        tool_log.archive_release.set()
        await asyncio.sleep(0.05)
    assert [type(e).__name__ for e in seen] == ["FirstToken", "Filler"]
    assert len(server.requests) == 1  # no follow-up request after the barge-in


async def test_sentence_cascade_opener_then_strong_continuation(host, sage, tool_log) -> None:
    from npcs.engines.sentence_cascade import SentenceCascadeEngine

    def script(body: dict) -> Step:
        if body["model"] == "fast":
            return Step(content="Ah, the Shadowfell. This part must never be spoken.")
        if any(m["role"] == "tool" for m in body["messages"]):
            return Step(content="It is a plane of shadow.")
        return Step(tool_calls=[("roll_die", {})])

    async with FakeOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        strong = CascadedEngine(client, model="strong", host=host)
        engine = SentenceCascadeEngine(strong, fast_model="fast")
        request = TurnRequest(sage, "Alice", "What is the Shadowfell?", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine, request), 10)

    kinds = [type(e).__name__ for e in events]
    assert kinds == ["FirstToken", "Sentence", "ToolsUsed", "Sentence", "TurnDone"]
    assert events[1] == Sentence("Ah, the Shadowfell.")
    done = events[-1]
    assert isinstance(done, TurnDone) and done.engine == "sentence_cascade"
    assert done.text == "Ah, the Shadowfell. It is a plane of shadow."
    fast_request, strong_request = server.requests[0], server.requests[1]
    assert fast_request["model"] == "fast" and "tools" not in fast_request
    assert strong_request["model"] == "strong" and strong_request["tools"]
    prefix = strong_request["messages"][-2:]
    assert prefix[0] == {"role": "assistant", "content": "Ah, the Shadowfell."}
    assert prefix[1]["role"] == "system" and "Continue" in prefix[1]["content"]
    assert tool_log.calls == ["roll_die"]


async def test_llm_http_error_is_a_clear_glyphoxa_error(sage) -> None:
    from campaigns.basics import GlyphoxaError

    async with FakeOpenAI([Step(status=503)]) as server:
        request = TurnRequest(sage, "Alice", "Hello?", Tier.FAST)
        with pytest.raises(GlyphoxaError, match=r"LLM request failed \(503\).*model overloaded"):
            await asyncio.wait_for(collect(engine_for(server, None), request), 10)


async def test_connection_lost_mid_stream_is_a_clear_glyphoxa_error(sage) -> None:
    from campaigns.basics import GlyphoxaError

    script = [Step(content="One two three four five six. Seven.", abort_after=3)]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Hello?", Tier.FAST)
        with pytest.raises(GlyphoxaError, match="LLM stream broke"):
            await asyncio.wait_for(collect(engine_for(server, None), request), 10)


async def test_unstreamed_tool_rounds_for_servers_that_cannot_stream_tools(host, sage) -> None:
    script = [
        Step(tool_calls=[("roll_die", {})]),
        Step(content="You rolled a four. Lucky you."),
    ]
    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host, stream_tool_rounds=False, max_depth=1)
        request = TurnRequest(sage, "Alice", "Roll for me.", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine, request), 10)
    # The round offering tools is a plain request; the last round (no tools) streams.
    assert [r.get("stream") for r in server.requests] == [False, True]
    assert [bool(r.get("tools")) for r in server.requests] == [True, False]
    assert [type(e).__name__ for e in events] == [
        "FirstToken",
        "ToolsUsed",
        "Sentence",
        "Sentence",
        "TurnDone",
    ]


async def test_tool_call_written_as_text_is_never_spoken_and_runs_as_a_real_call(
    host, sage, tool_log
) -> None:
    script = [
        Step(content='Aye. functions.roll die: {"sides": 6}'),
        Step(content="A four."),
    ]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Roll for me.", Tier.FAST)
        events = await collect(engine_for(server, host), request)
    spoken = [e.text for e in events if isinstance(e, Sentence)]
    assert spoken == ["Aye.", "A four."]
    assert tool_log.calls == ["roll_die"]  # through the host: whitelist and tier checked
    assistant = server.requests[1]["messages"][-2]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "roll_die",
        "arguments": '{"sides": 6}',
    }
    assert (events[-1].text, events[-1].engine) == ("Aye. A four.", "cascaded")


async def test_text_call_of_a_tool_the_npc_cannot_see_is_dropped(host, sage, tool_log) -> None:
    script = [Step(content='open_vault({"door": "north"})'), Step(content="It stays shut.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Open it.", Tier.FAST)
        events = await collect(engine_for(server, host, stream_tool_rounds=False), request)
    assert tool_log.calls == []  # never run, never spoken; the model is asked once more
    assert [e.text for e in events if isinstance(e, Sentence)] == ["It stays shut."]
    assert len(server.requests) == 2
    assert server.requests[1]["messages"] == server.requests[0]["messages"]


async def test_an_answer_with_nothing_clean_is_asked_again_once_then_the_fallback_line(
    host, sage
) -> None:
    """Another speaker's line twice: asked again once, then the NPC says its fallback line
    (never silence), and the turn's record counts both repairs."""
    from npcs.context import SceneLine

    npc = sage.model_copy(update={"fallback_lines": ["The stars are unclear tonight."]})
    script = [Step(content="Tobble: Me first!"), Step(content="Tobble: No, me!"),
              Step(content="Hi!")]  # fmt: skip
    async with FakeOpenAI(script) as server:
        scene = [SceneLine("Tobble", "Hello all.")]
        request = TurnRequest(npc, "Alice", "Hi!", Tier.FAST, scene=scene)
        events = await collect(engine_for(server, host), request)
    assert [e.text for e in events if isinstance(e, Sentence)] == ["The stars are unclear tonight."]
    assert len(server.requests) == 2
    done = events[-1]
    assert isinstance(done, TurnDone) and done.text == "The stars are unclear tonight."
    assert dict(done.repairs) == {"label": 2, "regenerated": 1, "fallback": 1}


async def test_asking_again_does_not_use_up_the_tool_rounds(host, sage) -> None:
    """The bundled model gets two tool rounds: after one, an unspeakable answer used to
    leave a last round with no second look, and the turn failed with a die already rolled."""
    script = [Step(tool_calls=[("roll_die", {})]), Step(content="Alice: A four?"),
              Step(content="A four. Lucky you.")]  # fmt: skip
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Roll for me.", Tier.FAST)
        events = await collect(engine_for(server, host, max_depth=2), request)
    assert [e.text for e in events if isinstance(e, Sentence)] == ["A four.", "Lucky you."]
    assert len(server.requests) == 3
    assert [bool(r.get("tools")) for r in server.requests] == [True, True, True]


async def test_an_answer_asked_again_starts_as_the_npcs_own_quoted_line(host, sage) -> None:
    """With ``retry_in_character``, the round asked again carries ``Name: "`` as a last
    assistant message and stops at the closing quote; the first round is left free."""
    script = [Step(content='Alice said: "Hi!"'), Step(content="Well met, traveller.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Hi!", Tier.FAST)
        engine = engine_for(server, host, stop_at_speakers=True, retry_in_character=True)
        events = await collect(engine, request)
    assert [e.text for e in events if isinstance(e, Sentence)] == ["Well met, traveller."]
    first, again = server.requests
    assert first["messages"][-1]["role"] == "user" and '"' not in first["stop"]
    assert again["messages"][:-1] == first["messages"]
    assert again["messages"][-1] == {"role": "assistant", "content": 'Greymantle: "'}
    assert again["stop"] == [*first["stop"], '"']


async def test_a_fast_answer_opens_in_character_from_its_first_sample(host, sage) -> None:
    """With ``open_in_character``, a FAST answer's first round already carries ``Name: "`` and
    stops at the closing quote (what the model writes is the NPC's line: nothing to ask again
    for); a STANDARD answer's first round is left free, tools and all."""
    script = [Step(content="Well met, traveller. Sit."), Step(content="The old mill burned.")]
    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host, stop_at_speakers=True, open_in_character=True)
        fast = await collect(engine, TurnRequest(sage, "Alice", "Hi!", Tier.FAST))
        standard = await collect(engine, TurnRequest(sage, "Alice", "The mill?", Tier.STANDARD))
    assert [e.text for e in fast if isinstance(e, Sentence)] == ["Well met, traveller.", "Sit."]
    assert [e.text for e in standard if isinstance(e, Sentence)] == ["The old mill burned."]
    opened, free = server.requests
    assert opened["messages"][-1] == {"role": "assistant", "content": 'Greymantle: "'}
    assert opened["stop"][-1] == '"' and len(server.requests) == 2
    assert free["messages"][-1]["role"] == "user" and '"' not in free["stop"]
    assert free["tools"]


async def test_other_speakers_lines_are_cut_and_stop_sequences_sent(host, sage) -> None:
    from npcs.context import SceneLine

    script = [Step(content="Greymantle: Aye, friend. Tobble: Greymantle, you are")]
    async with FakeOpenAI(script) as server:
        scene = [SceneLine("Tobble", "Hello all."), SceneLine("Bartok", "Welcome!", npc="Bartok")]
        request = TurnRequest(sage, "Alice", "Hi!", Tier.FAST, scene=scene)
        engine = engine_for(server, None, stop_at_speakers=True, max_stops=None)
        events = await collect(engine, request)
    assert [e.text for e in events if isinstance(e, Sentence)] == ["Aye, friend."]
    stops = server.requests[0]["stop"]
    assert {"\nAlice:", "\nTobble:", "\nBartok:", "\nGreymantle:"} <= set(stops)


async def test_warm_up_prefills_each_npc_prompt_once_and_yields_to_turns(host, sage) -> None:
    from npcs.schema import NpcDefinition

    bard = NpcDefinition(name="Lute", personality="A bard.", budget_tier="fast", tools=["roll_die"])
    quiet = NpcDefinition(name="Mute", personality="Says little.")
    async with FakeOpenAI(lambda request: Step(content="x")) as server:
        engine = engine_for(server, host)
        assert await engine.warm_up([sage, bard, quiet, sage]) == 3
    first, second, third = server.requests
    assert all(r["max_tokens"] == 1 for r in server.requests)
    assert first["tool_choice"] == "auto" and first["tools"]
    assert first["messages"][0]["content"].startswith("You are Greymantle")
    assert [t["function"]["name"] for t in second["tools"]] == ["roll_die"]
    assert "tools" not in third


async def test_follow_up_without_scene_keeps_the_players_words(host, sage) -> None:
    from npcs.context import SceneLine

    script = [Step(tool_calls=[("roll_die", {})]), Step(content="A four.")]
    async with FakeOpenAI(script) as server:
        scene = [SceneLine("Tobble", "Hello all.")]
        request = TurnRequest(sage, "Alice", "Roll!", Tier.FAST, scene=scene)
        await collect(engine_for(server, host, follow_up_scene=False), request)
    first, follow_up = (r["messages"][1]["content"] for r in server.requests)
    assert 'Tobble said: "Hello all."' in first and first.endswith(
        "Answer as Greymantle. Alice says to you: Roll!"
    )
    assert follow_up == "Answer as Greymantle. Alice says to you: Roll!"
    assert server.requests[0]["messages"][0] == server.requests[1]["messages"][0]


async def test_sentence_cascade_opener_never_speaks_another_speakers_line(host, sage) -> None:
    from npcs.engines.sentence_cascade import SentenceCascadeEngine

    def script(body: dict) -> Step:
        if body["model"] == "fast":
            return Step(content="Alice: Greymantle, tell me more")
        return Step(content="It is a plane of shadow.")

    async with FakeOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        engine = SentenceCascadeEngine(CascadedEngine(client, model="strong"), fast_model="fast")
        request = TurnRequest(sage, "Alice", "What is the Shadowfell?", Tier.STANDARD)
        events = await asyncio.wait_for(collect(engine, request), 10)
    # the strong model's first sentence is spoken from its first phrase on
    assert [e.text for e in events if isinstance(e, Sentence)] == ["It is a plane", "of shadow."]


async def test_an_echo_of_the_players_words_is_not_spoken(host, sage) -> None:
    script = [Step(content="Roll the bones! Aye, a four."), Step(content="Roll the bones."),
              Step(content="A six.")]  # fmt: skip
    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host)
        first = await collect(engine, TurnRequest(sage, "Alice", "Roll the bones!", Tier.FAST))
        again = await collect(engine, TurnRequest(sage, "Alice", "Roll the bones.", Tier.FAST))
    assert [e.text for e in first if isinstance(e, Sentence)] == ["Aye, a four."]
    assert [e.text for e in again if isinstance(e, Sentence)] == ["A six."]  # asked once more


async def test_a_speculative_turn_runs_side_effects_only_once_adopted(host, tool_log) -> None:
    from npcs.schema import NpcDefinition

    keeper = NpcDefinition(
        name="Keeper", personality="Guards a vault.", tools=["roll_die", "open_vault"]
    )
    script = [Step(tool_calls=[("roll_die", {})]), Step(tool_calls=[("open_vault", {})]),
              Step(content="Done.")] * 2  # fmt: skip
    waiting, adopted = asyncio.Event(), asyncio.Event()

    async def confirmed() -> None:
        waiting.set()
        await adopted.wait()

    async with FakeOpenAI(script) as server:
        engine = engine_for(server, host)
        guess = TurnRequest(keeper, "Alice", "Open it.", Tier.FAST, confirmed=confirmed)
        turn = asyncio.create_task(collect(engine, guess))
        await asyncio.wait_for(waiting.wait(), 10)
        assert tool_log.calls == ["roll_die"]  # read-only: ran at once; open_vault waits
        adopted.set()  # the final transcript confirmed the guess
        events = await asyncio.wait_for(turn, 10)
        assert tool_log.calls == ["roll_die", "open_vault"]
        assert [e.text for e in events if isinstance(e, Sentence)] == ["Done."]

        waiting.clear()
        adopted.clear()
        guess = TurnRequest(keeper, "Alice", "Open it.", Tier.FAST, confirmed=confirmed)
        dropped = asyncio.create_task(collect(engine, guess))
        await asyncio.wait_for(waiting.wait(), 10)
        dropped.cancel()  # the final said something else
        with contextlib.suppress(asyncio.CancelledError):
            await dropped
    assert tool_log.calls == ["roll_die", "open_vault", "roll_die"]  # the vault stayed shut
