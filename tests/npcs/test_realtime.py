"""Realtime engine against a local websocket server speaking the Realtime GA events."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

import pytest
from openai import AsyncOpenAI

from campaigns.basics import AudioChunk, Tier
from npcs.context import SceneLine
from npcs.engines import CascadedEngine, FirstToken, ToolsUsed, TurnDone, TurnRequest
from npcs.engines.realtime import RealtimeEngine, RenewalPolicy
from npcs.schema import NpcDefinition

from .npcs_fake_openai import FakeOpenAI, Step
from .npcs_fake_realtime import FakeRealtime, Reply

ORACLE = NpcDefinition(
    name="Oracle",
    personality="A cryptic oracle.",
    budget_tier="deep",
    voice={"provider": "openai", "voice": "sage"},
    tools=["roll_die", "consult_archive", "deep_lore"],
)


def engine_for(server: FakeRealtime, host, fallback=None) -> RealtimeEngine:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return RealtimeEngine(client, model="gpt-realtime", host=host, fallback=fallback)


async def run(engine: RealtimeEngine, request: TurnRequest) -> list[Any]:
    async with contextlib.aclosing(engine.respond(request)) as events:
        return await asyncio.wait_for(_all(events), 10)


async def _all(events) -> list[Any]:
    return [event async for event in events]


def function_outputs(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items = [m["item"] for m in received if m["type"] == "conversation.item.create"]
    return [item for item in items if item["type"] == "function_call_output"]


async def test_tool_round_trip(host, tool_log) -> None:
    def script(received: list[dict[str, Any]]) -> Reply:
        if function_outputs(received):
            return Reply(transcript="You rolled a four.", audio_chunks=3)
        return Reply(function_call=("roll_die", {"sides": 6}))

    async with FakeRealtime(script) as server:
        engine = engine_for(server, host)
        try:
            events = await run(engine, TurnRequest(ORACLE, "Alice", "Roll for me.", Tier.FAST))
        finally:
            await engine.aclose()

    assert server.paths[0] == "/v1/realtime?model=gpt-realtime"
    assert server.headers[0]["authorization"] == "Bearer test-key"
    first_update = server.of_type("session.update")[0]["session"]
    assert first_update["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert first_update["audio"]["output"]["voice"] == "sage"
    assert first_update["audio"]["input"]["turn_detection"] is None
    assert tool_log.calls == ["roll_die"]
    (output,) = function_outputs(server.received)
    assert output["call_id"] == server.call_ids[0]
    assert output["output"] == '{"value": 4}'
    # function_call_output is followed by response.create
    kinds = [m["type"] for m in server.received]
    at = kinds.index("conversation.item.create", kinds.index("response.create"))
    assert kinds[at + 1] == "response.create"
    assert isinstance(events[0], ToolsUsed)
    assert isinstance(events[1], FirstToken)
    audio = [e for e in events if isinstance(e, AudioChunk)]
    assert len(audio) == 3 and all(a.sample_rate == 24000 and len(a.pcm) == 4800 for a in audio)
    assert events[-1] == TurnDone("You rolled a four.", engine="realtime")


async def test_tier_change_redeclares_tools(host) -> None:
    async with FakeRealtime(lambda _: Reply(transcript="Hm.", audio_chunks=1)) as server:
        engine = engine_for(server, host)
        try:
            await run(engine, TurnRequest(ORACLE, "Alice", "Hello.", Tier.FAST))
            await run(engine, TurnRequest(ORACLE, "Alice", "Roll.", Tier.FAST))
            await run(engine, TurnRequest(ORACLE, "Alice", "Who is he?", Tier.STANDARD))
        finally:
            await engine.aclose()
    declared = [
        [t["name"] for t in m["session"]["tools"]]
        for m in server.of_type("session.update")
        if "tools" in m["session"]
    ]
    # FAST once (the second FAST turn re-uses it), then STANDARD adds the archive.
    assert declared == [["roll_die"], ["roll_die", "consult_archive"]]
    assert len(server.paths) == 1  # one connection for the NPC across turns


async def test_slow_tools_route_the_whole_turn_through_cascaded(host) -> None:
    async with (
        FakeRealtime(lambda _: Reply(transcript="unused")) as realtime,
        FakeOpenAI([Step(content="Let me tell you of the old days.")]) as chat,
    ):
        client = AsyncOpenAI(base_url=chat.base_url, api_key="k", max_retries=0)
        cascaded = CascadedEngine(client, model="strong", host=host)
        engine = engine_for(realtime, host, fallback=cascaded)
        request = TurnRequest(ORACLE, "Alice", "Tell me everything.", Tier.DEEP)
        assert engine.needs_cascade(request)
        events = await run(engine, request)
        await engine.aclose()
        await client.close()  # its keep-alive connection (a ResourceWarning in CI otherwise)
    assert (events[-1].text, events[-1].engine) == ("Let me tell you of the old days.", "cascaded")
    assert realtime.received == []  # realtime never opened a turn
    assert "deep_lore" in {t["function"]["name"] for t in chat.requests[0]["tools"]}


async def test_barge_in_cancels_and_truncates_to_the_audio_played(host) -> None:
    async with FakeRealtime(
        lambda _: Reply(transcript="A long story", audio_chunks=5, hold=True)
    ) as server:
        engine = engine_for(server, host)
        played = {"ms": 0.0}
        request = TurnRequest(
            ORACLE,
            "Alice",
            "Tell me a story.",
            Tier.FAST,
            scene=[SceneLine("Bob", "I like stories.", at=1.0)],
            played_ms=lambda: played["ms"],
        )
        chunks: list[AudioChunk] = []

        async def consume() -> None:
            async with contextlib.aclosing(engine.respond(request)) as events:
                async for event in events:
                    if isinstance(event, AudioChunk):
                        chunks.append(event)
                        if len(chunks) == 2:
                            played["ms"] = 150.0
                            ready.set()

        ready = asyncio.Event()
        task = asyncio.create_task(consume())
        await asyncio.wait_for(ready.wait(), 10)
        await asyncio.sleep(0.05)  # the engine waits for more events
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.truncated.wait(), 5)
        await engine.aclose()

    (cancel,) = server.of_type("response.cancel")
    (truncate,) = server.of_type("conversation.item.truncate")
    created = [m for m in server.received if m["type"] == "conversation.item.create"]
    assert created[0]["item"]["role"] == "system"
    assert 'Bob said: "I like stories."' in created[0]["item"]["content"][0]["text"]
    assert cancel["response_id"].startswith("resp_")
    assert truncate["audio_end_ms"] == 150
    assert truncate["content_index"] == 0
    assert truncate["item_id"].startswith("item_")


async def test_audio_input_is_appended_and_committed(host) -> None:
    async with FakeRealtime(lambda _: Reply(transcript="Yes.", audio_chunks=1)) as server:
        engine = engine_for(server, host)
        audio = b"\x01\x00" * 36000  # 1.5 s of 24 kHz s16le
        request = TurnRequest(ORACLE, "Alice", "", Tier.FAST, audio=audio)
        await run(engine, request)
        await engine.aclose()
    appended = b"".join(
        base64.b64decode(m["audio"]) for m in server.of_type("input_audio_buffer.append")
    )
    assert appended == audio
    assert len(server.of_type("input_audio_buffer.commit")) == 1


async def test_from_config_uses_provider_settings(host) -> None:
    from bot.settings.providers import RealtimeProvider

    async with FakeRealtime(lambda _: Reply(transcript="Yes.", audio_chunks=1)) as server:
        provider = RealtimeProvider.model_validate(
            dict(
                name="openai",
                model="gpt-realtime-mini",
                base_url=server.base_url,
                api_key="secret-key",
                options={
                    "voice": "verse",
                    "max_realtime_tier": "fast",
                    "session_limit_s": 900,
                    "renew_margin_s": 60,
                    "carry_turns": 4,
                },
            )
        )
        engine = RealtimeEngine.from_config(provider, host=host)
        npc = NpcDefinition(name="Guard", personality="A guard.", tools=["roll_die"])
        await run(engine, TurnRequest(npc, "Alice", "Halt?", Tier.FAST))
        await engine.aclose()
    assert engine.max_realtime_tier == Tier.FAST
    assert engine.sessions.policy == RenewalPolicy(limit_s=900, margin_s=60, carry_turns=4)
    assert server.paths[0] == "/v1/realtime?model=gpt-realtime-mini"
    assert server.headers[0]["authorization"] == "Bearer secret-key"
    assert server.of_type("session.update")[0]["session"]["audio"]["output"]["voice"] == "verse"


@pytest.mark.parametrize(
    ("refuse", "first", "error", "connections"),
    [
        # the websocket drops in the middle of an answer, and again when the turn is asked
        # again on a new session (once); a third session is opened at once for the next turn
        (0, [Reply(close=True)] * 2, "realtime connection for Oracle lost: ", 3),
        # the server drops it right after the handshake: the session set-up fails with our own
        # error, not websockets' ConnectionClosedError, and the connection is closed
        (1, [], "realtime connection for Oracle lost while setting it up: ", 2),
    ],
)
async def test_lost_connection_is_a_clear_error_and_the_next_turn_reconnects(
    host, refuse: int, first: list[Reply], error: str, connections: int
) -> None:
    from campaigns.basics import GlyphoxaError

    replies = iter([*first, Reply(transcript="Back again.", audio_chunks=1)])
    async with FakeRealtime(lambda _: next(replies), refuse=refuse) as server:
        engine = engine_for(server, host)
        with pytest.raises(GlyphoxaError, match=error):
            await run(engine, TurnRequest(ORACLE, "Alice", "Hello?", Tier.FAST))
        events = await run(engine, TurnRequest(ORACLE, "Alice", "Hello again?", Tier.FAST))
        await engine.aclose()
    assert events[-1] == TurnDone("Back again.", engine="realtime")
    assert len(server.paths) == connections


async def test_two_turns_at_once_share_one_connection(host) -> None:
    async with FakeRealtime(lambda _: Reply(transcript="One at a time.", audio_chunks=1)) as server:
        engine = engine_for(server, host)
        both = await asyncio.gather(
            run(engine, TurnRequest(ORACLE, "Alice", "Hello?", Tier.FAST)),
            run(engine, TurnRequest(ORACLE, "Bob", "And me?", Tier.FAST)),
        )
        await engine.aclose()
    assert [events[-1] for events in both] == [TurnDone("One at a time.", engine="realtime")] * 2
    assert len(server.paths) == 1


async def test_hot_reloaded_persona_updates_the_instructions(host) -> None:
    async with FakeRealtime(lambda _: Reply(transcript="Hm.", audio_chunks=1)) as server:
        engine = engine_for(server, host)
        await run(engine, TurnRequest(ORACLE, "Alice", "Hello.", Tier.FAST))
        changed = ORACLE.model_copy(update={"personality": "A cheerful oracle."})
        await run(engine, TurnRequest(changed, "Alice", "Hello.", Tier.FAST))
        await engine.aclose()
    instructions = [
        m["session"]["instructions"]
        for m in server.of_type("session.update")
        if "instructions" in m["session"]
    ]
    assert len(instructions) == 2
    assert "A cryptic oracle." in instructions[0] and "A cheerful oracle." in instructions[1]


async def test_each_response_reports_its_text_and_audio_tokens(host) -> None:
    """``response.done`` carries the response's usage; the spend meter prices text and audio
    tokens apart at the realtime model's prices."""
    from bot.settings.spend import PricingConfig, SpendConfig
    from bot.table.session.spend import SpendMeter

    usage = {
        "total_tokens": 1500, "input_tokens": 1200, "output_tokens": 300,
        "input_token_details": {"text_tokens": 1000, "audio_tokens": 200, "cached_tokens": 0},
        "output_token_details": {"text_tokens": 60, "audio_tokens": 240},
    }  # fmt: skip
    reply = Reply(transcript="Yes.", audio_chunks=1, usage=usage)
    meter = SpendMeter(PricingConfig(), SpendConfig())
    async with FakeRealtime(lambda _: reply) as server:
        engine = engine_for(server, host)
        engine.meter = meter.sink(free=False)
        await run(engine, TurnRequest(ORACLE, "Alice", "Will it rain?", Tier.FAST))
        await run(engine, TurnRequest(ORACLE, "Alice", "And tomorrow?", Tier.FAST))
        await engine.aclose()
    (row,) = meter.rows.values()
    assert (row.service, row.model, row.npc, row.calls) == (
        "realtime",
        "gpt-realtime",
        ORACLE.name,
        2,
    )
    assert (row.input_tokens, row.output_tokens) == (2000, 120)
    assert (row.audio_input_tokens, row.audio_output_tokens) == (400, 480)
    # gpt-realtime: text $4 / $16, audio $32 / $64 per million tokens
    expected = (2000 * 4 + 120 * 16 + 400 * 32 + 480 * 64) / 1e6
    assert meter.total_usd == pytest.approx(expected)
