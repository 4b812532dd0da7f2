"""A realtime NPC at a table for longer than its provider's session limit: the session is renewed
between turns with the conversation carried over, a player's line arriving during the switch is
answered once (by the new session, from the carried context), and a session the server ends
early is replaced at once. The local Realtime server ends sessions like OpenAI's does at 30
minutes, only sooner."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI
from table_script import EnergyVad, TableDriver, ToneStt, ToneTts

from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.events import NpcSpoke, Routed
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign
from npcs.engines.realtime import RealtimeEngine, RenewalPolicy
from tests.npcs.npcs_fake_realtime import FakeRealtime, Reply, user_texts

FACT = "Whisper, the key is under the third barrel."
QUESTION = "Whisper, where did Arin say the key was?"


def whisper(received: list[dict[str, Any]]) -> Reply:
    """Answers the question only from what its own session was told."""
    texts = user_texts(received)
    if "where did Arin say" in texts[-1]:
        known = any("third barrel" in text for text in texts[:-1])
        answer = "Under the third barrel." if known else "I never heard."
        return Reply(transcript=answer, audio_chunks=6)
    return Reply(transcript="I will keep that secret.", audio_chunks=6)


@contextlib.asynccontextmanager
async def table(
    server: FakeRealtime, policy: RenewalPolicy, config: GlyphoxaConfig, campaign: Campaign,
    memory: MemoryStore,
) -> AsyncIterator[tuple[TableDriver, RealtimeEngine]]:  # fmt: skip
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    engine = RealtimeEngine(client, model="gpt-realtime", renewal=policy)
    stt, tts = ToneStt(), ToneTts()
    session = build_session(
        config=config, campaign=campaign, stt=stt, tts=tts, engines=lambda npc: engine,
        memory=memory, metrics=Metrics(), vad_factory=EnergyVad, speculate=False,
    )  # fmt: skip
    await session.start()
    try:
        yield TableDriver(session, stt, ["Arin", "Tobble"]), engine
    finally:
        await session.stop()
        await engine.aclose()


def turns_sent(received: list[dict[str, Any]], text: str) -> int:
    """How often ``text`` reached the session as a player's turn (answered right after)."""
    return sum(
        1
        for m, after in itertools.pairwise(received)
        if m["type"] == "conversation.item.create"
        and text in str(m["item"])
        and after == {"type": "response.create"}
    )


def routed(driver: TableDriver) -> list[Routed]:
    return driver.of_type(Routed)


def spoken(driver: TableDriver) -> list[str]:
    return [event.trace.spoken for event in driver.of_type(NpcSpoke)]


async def test_a_line_said_during_the_switch_is_answered_once_from_the_carried_talk(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> None:
    gate = asyncio.Event()
    async with (
        FakeRealtime(whisper, summary_gate=gate, expire_after_s=20.0) as server,
        table(server, RenewalPolicy(limit_s=20.0, margin_s=18.5), config, campaign, memory) as (
            driver,
            engine,
        ),
    ):
        driver.say("Arin", FACT, stable=True)
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
        await driver.run_until(server.summary_asked.is_set)  # 1.5 s in: the switch begins
        driver.say("Tobble", QUESTION, stable=True)
        await driver.run_until(
            lambda: any(r.speaker == "Tobble" and r.npcs == ("Whisper",) for r in routed(driver))
        )
        for _ in range(100):  # the question waits while the old session summarizes
            await driver.tick()
        assert len(server.connections) == 1 and len(driver.of_type(NpcSpoke)) == 1
        assert engine.sessions.lock("Whisper").locked() and engine.sessions.renewals == 0
        gate.set()
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 2)
        for _ in range(100):  # nothing more is said: no turn answered twice
            await driver.tick()
        assert server.expired == 0 and engine.sessions.renewals == 1  # before the limit
    assert spoken(driver) == ["I will keep that secret.", "Under the third barrel."]
    old, new = server.connections
    assert (turns_sent(old, FACT), turns_sent(new, FACT)) == (1, 0)
    assert (turns_sent(old, QUESTION), turns_sent(new, QUESTION)) == (0, 1)
    assert any("third barrel" in text for text in user_texts(new)[:-1])  # carried over


async def test_a_session_the_server_ends_early_is_replaced_before_the_next_line(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.INFO, logger="npcs.engines.realtime_keeper")
    async with (
        FakeRealtime(whisper, expire_after_s=1.0, expire_connections=1) as server,
        table(server, RenewalPolicy(), config, campaign, memory) as (driver, engine),
    ):
        driver.say("Arin", FACT, stable=True)
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
        await driver.run_until(lambda: engine.sessions.renewals == 1)  # no turn needed
        driver.say("Tobble", QUESTION, stable=True)
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 2)
    assert spoken(driver) == ["I will keep that secret.", "Under the third barrel."]
    old, new = server.connections
    assert (turns_sent(old, FACT), turns_sent(new, QUESTION), turns_sent(new, FACT)) == (1, 1, 0)
    assert "realtime session for Whisper was ended by the server after" in caplog.text
    assert "session_expired" in caplog.text
