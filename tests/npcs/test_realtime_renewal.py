"""Realtime sessions past the provider's limit: renewed between turns with the conversation and
the tools carried over, against a local server that ends sessions after a short time like
OpenAI's does after 30 minutes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest
from openai import AsyncOpenAI

from bot.settings.spend import PricingConfig, SpendConfig
from bot.table.session.spend import SpendMeter
from campaigns.basics import GlyphoxaError, Tier
from npcs.engines import TurnDone, TurnRequest
from npcs.engines.realtime import RealtimeEngine, RenewalPolicy

from .npcs_fake_realtime import FakeRealtime, Reply, user_texts
from .test_realtime import ORACLE, run

FACT = "The key is under the third barrel."
QUESTION = "Where did I say the key was?"


def knowing(received: list[dict[str, Any]]) -> Reply:
    """A model that answers the question only from what its own session was told."""
    texts = user_texts(received)
    if QUESTION in texts[-1]:
        known = any("third barrel" in text for text in texts[:-1])
        return Reply(transcript="Under the third barrel." if known else "I never heard.")
    return Reply(transcript="I will remember that.", audio_chunks=2)


def engine_for(server: FakeRealtime, host, policy: RenewalPolicy) -> RealtimeEngine:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return RealtimeEngine(client, model="gpt-realtime", host=host, renewal=policy)


def ask(text: str, speaker: str = "Alice") -> TurnRequest:
    return TurnRequest(ORACLE, speaker, text, Tier.FAST)


def answers(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``response.create`` requests that answer a turn (not out-of-band summaries)."""
    return [
        m
        for m in received
        if m["type"] == "response.create" and m.get("response", {}).get("conversation") != "none"
    ]


def live(received: list[dict[str, Any]], text: str) -> int:
    """How often ``text`` was sent as a turn (followed by a response.create)."""
    count = 0
    for index, m in enumerate(received):
        said = m["type"] == "conversation.item.create" and text in str(m["item"])
        if said and index + 1 < len(received) and received[index + 1] in answers(received):
            count += 1
    return count


def carried(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items a session was told before its first turn."""
    first = received.index(answers(received)[0]) if answers(received) else len(received)
    return [m["item"] for m in received[:first] if m["type"] == "conversation.item.create"]


async def test_a_session_is_renewed_before_its_limit_with_the_conversation_and_tools(
    host, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="npcs.engines.realtime_keeper")
    async with FakeRealtime(knowing, expire_after_s=1.5) as server:
        engine = engine_for(server, host, RenewalPolicy(limit_s=1.5, margin_s=0.7))
        meter = SpendMeter(PricingConfig(), SpendConfig())
        engine.meter = meter.sink(free=False)
        try:
            first = await run(engine, ask(FACT))
            await server.wait_until(lambda: len(server.connections) == 2)
            second = await run(engine, ask(QUESTION, speaker="Bob"))
            assert server.expired == 0  # renewed before the server's limit
        finally:
            await engine.aclose()
    old, new = server.connections
    # the old session was asked for a summary (out of band, text), after its turn finished
    (summary_request,) = [m for m in old if m.get("response", {}).get("conversation") == "none"]
    assert summary_request["response"]["output_modalities"] == ["text"]
    assert old.index(summary_request) > old.index(answers(old)[0])
    # the new one got the same persona, voice and tools, then the summary and the recent turn
    setup = [m["session"] for m in old if m["type"] == "session.update"]
    assert [m["session"] for m in new if m["type"] == "session.update"] == setup
    items = carried(new)
    assert items[0]["role"] == "system" and "third barrel" in items[0]["content"][0]["text"]
    assert items[1] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": f"Alice says to you: {FACT}"}],
    }
    assert items[2]["role"] == "assistant"
    assert items[2]["content"] == [{"type": "output_text", "text": "I will remember that."}]
    # each turn was sent and answered exactly once, the question on the new session
    assert (live(old, FACT), live(new, FACT), live(old, QUESTION), live(new, QUESTION)) == (
        1,
        0,
        0,
        1,
    )
    assert (len(answers(old)), len(answers(new))) == (1, 1)
    assert first[-1] == TurnDone("I will remember that.", engine="realtime")
    assert second[-1] == TurnDone("Under the third barrel.", engine="realtime")
    assert engine.sessions.renewals == 1
    assert "carried the model's summary and 1 recent turns" in caplog.text
    # the summary is billed like any response: the NPC's text tokens, priced
    (row,) = meter.rows.values()  # the turns' responses reported no usage
    assert (row.service, row.model, row.npc, row.calls) == ("realtime", "gpt-realtime", "Oracle", 1)
    assert row.input_tokens == 400 and row.output_tokens > 0 and row.audio_output_tokens == 0
    assert row.cost_usd > 0


async def test_renewal_waits_for_the_turn_in_progress_and_queues_the_next_one(host) -> None:
    gate = asyncio.Event()
    replies = {FACT: Reply(transcript="Noted, noted.", audio_chunks=10, chunk_delay_s=0.08)}

    def script(received: list[dict[str, Any]]) -> Reply:
        said = user_texts(received)[-1]
        return next((r for text, r in replies.items() if text in said), knowing(received))

    async with FakeRealtime(script, summary_gate=gate) as server:
        # renew 0.3 s after opening: in the middle of the first answer (0.8 s of streaming)
        engine = engine_for(server, host, RenewalPolicy(limit_s=60, margin_s=59.7))
        try:
            first = asyncio.create_task(run(engine, ask(FACT)))
            await asyncio.wait_for(server.summary_asked.wait(), 10)
            assert first.done()  # the renewal began only once the answer had finished
            second = asyncio.create_task(run(engine, ask(QUESTION, speaker="Bob")))
            await asyncio.sleep(0.1)  # the question arrives while the old session summarizes
            assert not second.done() and engine.sessions.lock("Oracle").locked()
            gate.set()
            events = await asyncio.wait_for(second, 10)
        finally:
            await engine.aclose()
    old, new = server.connections
    assert (live(old, QUESTION), live(new, QUESTION)) == (0, 1)  # queued, then answered once
    assert (len(answers(old)), len(answers(new))) == (1, 1)
    assert [e for e in events if isinstance(e, TurnDone)] == [
        TurnDone("Under the third barrel.", engine="realtime")
    ]
    assert (await asyncio.wait_for(first, 10))[-1] == TurnDone("Noted, noted.", engine="realtime")


async def test_a_session_the_server_ends_early_is_renewed_at_once(
    host, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="npcs.engines.realtime_keeper")
    async with FakeRealtime(knowing, expire_after_s=0.4, expire_connections=1) as server:
        engine = engine_for(server, host, RenewalPolicy())  # OpenAI's 30 minutes
        try:
            await run(engine, ask(FACT))
            # no turn is waiting: the engine notices the close and renews by itself
            await server.wait_until(lambda: len(server.connections) == 2)
            await server.wait_until(lambda: engine.sessions.renewals == 1)
            events = await run(engine, ask(QUESTION, speaker="Bob"))
        finally:
            await engine.aclose()
    old, new = server.connections
    assert server.expired == 1
    assert not [m for m in old if m.get("response", {}).get("conversation") == "none"]
    assert any(FACT in str(item) for item in carried(new))
    assert (live(old, FACT), live(new, FACT), live(new, QUESTION)) == (1, 0, 1)
    assert events[-1] == TurnDone("Under the third barrel.", engine="realtime")
    assert "was ended by the server after" in caplog.text
    assert "session_expired: Your session hit the maximum duration" in caplog.text


async def test_a_turn_the_server_cut_before_answering_is_asked_again_once(
    host, caplog: pytest.LogCaptureFixture
) -> None:
    replies = iter([Reply(close=True)])

    def script(received: list[dict[str, Any]]) -> Reply:
        return next(replies, None) or knowing(received)

    async with FakeRealtime(script) as server:
        engine = engine_for(server, host, RenewalPolicy())
        try:
            events = await run(engine, ask(FACT))
        finally:
            await engine.aclose()
    old, new = server.connections
    assert (live(old, FACT), live(new, FACT)) == (1, 1)  # sent again, answered once
    assert [e for e in events if isinstance(e, TurnDone)] == [
        TurnDone("I will remember that.", engine="realtime")
    ]
    assert "ended by the server before it answered" in caplog.text


async def test_an_answer_cut_twice_fails_clearly_and_the_next_turn_knows_the_table(host) -> None:
    closes = iter([Reply(close=True), Reply(close=True)])

    def script(received: list[dict[str, Any]]) -> Reply:
        cut = FACT in user_texts(received)[-1] and next(closes, None)
        return cut or knowing(received)

    async with FakeRealtime(script) as server:
        engine = engine_for(server, host, RenewalPolicy())
        try:
            await run(engine, ask("Hello there."))
            with pytest.raises(GlyphoxaError, match="realtime connection for Oracle lost: "):
                await run(engine, ask(FACT))
            await server.wait_until(lambda: len(server.connections) == 3)
            events = await run(engine, ask("And now?"))
        finally:
            await engine.aclose()
    assert len(server.connections) == 3  # renewed at once, and the next turn used it
    assert any("Hello there." in str(item) for item in carried(server.connections[2]))
    assert events[-1] == TurnDone("I will remember that.", engine="realtime")


def test_a_margin_that_does_not_fit_the_limit_is_refused() -> None:
    with pytest.raises(ValueError, match=r"0 <= margin \(60 s\) < limit \(60 s\)"):
        RenewalPolicy(limit_s=60, margin_s=60)


async def test_closing_the_engine_stops_renewing(host) -> None:
    async with FakeRealtime(knowing) as server:
        engine = engine_for(server, host, RenewalPolicy(limit_s=0.3, margin_s=0.1))
        await run(engine, ask(FACT))
        await engine.aclose()
        with contextlib.suppress(TimeoutError):
            await server.wait_until(lambda: len(server.connections) > 1, timeout_s=0.5)
    assert len(server.connections) == 1
