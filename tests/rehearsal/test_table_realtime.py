"""A realtime (speech-to-speech) NPC inside a table session: the player's words reach a local
websocket server speaking the Realtime GA events, its audio reaches the mixer, its transcript
the scene and memory, and a barge-in cancels the response and truncates it to what was heard."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from conftest import Table
from openai import AsyncOpenAI
from table_script import EnergyVad, ScriptedEngine, TableDriver, ToneStt, ToneTts

from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.events import BargedIn, NpcSpoke
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign
from npcs.engines.realtime import RealtimeEngine
from tests.npcs.npcs_fake_realtime import FakeRealtime, Reply


@pytest.fixture
async def realtime_table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[tuple[Table, FakeRealtime]]:
    replies = [Reply(transcript="The shadows whisper back.", audio_chunks=8),
               Reply(transcript="A long tale of the old mill and its", audio_chunks=60,
                     hold=True)]  # fmt: skip
    async with FakeRealtime(lambda received: replies.pop(0)) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        engine = RealtimeEngine(client, model="gpt-realtime")
        stt, tts, metrics = ToneStt(), ToneTts(), Metrics()
        session = build_session(
            config=config, campaign=campaign, stt=stt, tts=tts, engines=lambda npc: engine,
            memory=memory, metrics=metrics, vad_factory=EnergyVad, speculate=False,
        )  # fmt: skip
        await session.start()
        driver = TableDriver(session, stt, ["Arin", "Tobble"])
        try:
            yield Table(session, driver, ScriptedEngine(replies={}), tts, metrics), server
        finally:
            await session.stop()
            await engine.aclose()


async def test_a_realtime_npc_speaks_through_the_mixer_and_can_be_cut_off(
    realtime_table: tuple[Table, FakeRealtime],
) -> None:
    table, server = realtime_table
    driver = table.driver
    driver.say("Arin", "Whisper, what do you hear?", stable=True)
    await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
    trace = driver.of_type(NpcSpoke)[0].trace
    assert (trace.npc, trace.spoken) == ("Whisper", "The shadows whisper back.")
    assert "Whisper" in driver.audible and trace.stages_ms()["voice_to_voice"] is not None
    asked = [m["item"] for m in server.of_type("conversation.item.create")]
    assert any("Whisper, what do you hear?" in str(item) for item in asked)
    assert table.session.scene[-1].text == "The shadows whisper back."

    driver.say("Tobble", "Whisper, tell me about the old mill.", stable=True)
    await driver.run_until(lambda: driver.audible[-1] == "Whisper", timeout_ticks=500)
    for _ in range(25):  # half a second of the answer reaches the players
        await driver.tick()
    driver.say("Arin", "Wait, Whisper, stop right there!", seconds=1.2, stable=True)
    await driver.run_until(lambda: driver.of_type(BargedIn), timeout_ticks=500)
    await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) >= 2, timeout_ticks=500)
    cut = driver.of_type(NpcSpoke)[1].trace
    full = "A long tale of the old mill and its"
    assert cut.interrupted and cut.spoken and full.startswith(cut.spoken) and cut.spoken != full
    heard = [line.text for line in table.session.scene if line.npc == "Whisper"]
    assert heard[-1] == cut.spoken  # only the words the players heard
    await driver.run_until(lambda: server.of_type("response.cancel"), timeout_ticks=200)
    truncated = server.of_type("conversation.item.truncate")
    assert truncated and 0 < truncated[-1]["audio_end_ms"] < 6000  # what was heard, not 6 s
