"""The real llama.cpp server dies under a turn: the reason is one line with its fix, turns fail
fast while it is down, it comes back by itself, and at the table the NPC says a filler line,
the turn counts as failed and the DM is told once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator

import pytest
from openai import AsyncOpenAI
from table_script import EnergyVad, TableDriver, ToneStt, ToneTts

from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.events import NpcSpoke, TableAlert
from bot.telemetry.metrics import Metrics
from campaigns.basics import Tier
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign
from npcs.engines import CascadedEngine, FirstToken, TurnDone, TurnRequest
from npcs.inference.health import LlmUnavailable
from npcs.inference.server import LocalLlmServer, llama_cpp_available
from npcs.schema import NpcDefinition

pytestmark = [
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python[server] missing"),
]

BARTOK = NpcDefinition(
    name="Bartok",
    personality="A dwarf barkeep who tells long stories.",
    filler_lines=["Hold that thought, friend."],
    llm={"max_tokens": 400, "temperature": 0.8},
)


@pytest.fixture
async def server() -> AsyncIterator[tuple[LocalLlmServer, list[tuple[str | None, str]]]]:
    """A server of this test's own (it gets killed), restarting after 2 s."""
    changes: list[tuple[str | None, str]] = []
    async with LocalLlmServer(n_threads=1, restart_backoff_s=2.0) as running:
        running.on_change.append(lambda reason, message: changes.append((reason, message)))
        yield running, changes


def engine_for(server: LocalLlmServer) -> CascadedEngine:
    client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=60)
    return CascadedEngine(client, model=server.model_id, health=server)


def request(text: str = "Tell me a long story about your tavern.") -> TurnRequest:
    return TurnRequest(npc=BARTOK, speaker="Arin", text=text, tier=Tier.FAST)


async def answer(engine: CascadedEngine) -> str:
    async with contextlib.aclosing(engine.respond(request())) as events:
        async for event in events:
            if isinstance(event, TurnDone):
                return event.text
    raise AssertionError("no TurnDone")


async def wait_until(condition, timeout_s: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("sig", "expected"),
    [
        (signal.SIGSEGV, r"crashed with SIGSEGV \(.*llama\.cpp\): rebuild with "
                         r"\./scripts/setup --rebuild-llm"),
        (signal.SIGKILL, r"crashed with SIGKILL \(killed from outside.*\): check free memory"),
    ],
)  # fmt: skip
async def test_a_crash_mid_answer_is_named_turns_fail_fast_and_the_server_returns(
    server: tuple[LocalLlmServer, list[tuple[str | None, str]]], sig: signal.Signals, expected: str
) -> None:
    llm, changes = server
    engine = engine_for(llm)
    with pytest.raises(LlmUnavailable, match=rf"^local LLM server {expected}") as crash:
        async with contextlib.aclosing(engine.respond(request())) as events:
            async for event in events:
                if isinstance(event, FirstToken):  # the answer is streaming: kill it now
                    assert llm.pid is not None
                    os.kill(llm.pid, sig)
    line = str(crash.value)
    assert "\n" not in line

    started = time.perf_counter()  # while it is down (restart after 2 s), turns fail at once
    with pytest.raises(LlmUnavailable) as fast:
        await answer(engine)
    assert time.perf_counter() - started < 0.1
    assert str(fast.value) == line

    await wait_until(lambda: llm.restarts == 1)
    assert isinstance(await answer(engine), str)  # the same engine and base_url work again
    assert (llm.crashes, llm.last_failure, llm.unavailable()) == (1, line, None)
    assert changes == [(line, line), (None, "local LLM server restarted (restart 1)")]


async def test_at_the_table_the_npc_says_a_filler_line_and_the_dm_is_told_once(
    server: tuple[LocalLlmServer, list[tuple[str | None, str]]],
    campaign: Campaign,
    memory: MemoryStore,
) -> None:
    llm, _ = server
    engine = engine_for(llm)
    stt, tts, metrics = ToneStt(), ToneTts(), Metrics()
    session = build_session(
        config=GlyphoxaConfig.model_validate({"campaign": {"hot_reload": False}}),
        campaign=campaign, stt=stt, tts=tts, engines=lambda npc: engine, memory=memory,
        metrics=metrics, vad_factory=EnergyVad, speculate=False,
    )  # fmt: skip
    llm.on_change.append(lambda reason, message: session.trouble.part_changed(
        "llm_server", reason, message))  # fmt: skip
    await session.start()
    try:
        driver = TableDriver(session, stt, ["Arin", "Tobble"])
        assert llm.pid is not None
        os.kill(llm.pid, signal.SIGSEGV)
        await wait_until(lambda: llm.unavailable() is not None, 10)
        driver.say("Arin", "Bartok, what's on tap tonight?")
        driver.say("Tobble", "Bartok, and for me?")
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 2 and not session.busy)
    finally:
        await session.stop()
    bartok = campaign.npcs["Bartok"]
    traces = [event.trace for event in driver.of_type(NpcSpoke)]
    for trace in traces:
        assert trace.error is not None and trace.error.startswith("local LLM server crashed")
        assert trace.fallback in bartok.filler_lines
        assert trace.spoken == trace.fallback  # the players heard it
    assert tts.spoken == [t.fallback for t in traces]
    assert metrics.sample("glyphoxa_turns_total", {"outcome": "failed", "tier": traces[0].tier})
    alerts = [event.message for event in driver.of_type(TableAlert)]
    assert len(alerts) == 1  # the crash once, not once per turn
    assert alerts[0].startswith("local LLM server crashed with SIGSEGV")
    assert metrics.sample("glyphoxa_failures_total", {"part": "llm_server"}) == 1.0
    assert metrics.sample("glyphoxa_failures_total", {"part": "npc_turn"}) == 2.0
