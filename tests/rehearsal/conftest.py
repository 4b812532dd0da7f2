"""Fixtures for table-session and rehearsal tests."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from table_script import EnergyVad, ScriptedEngine, TableDriver, ToneStt, ToneTts

from bot.bench.doubles.instant_llm import InstantLlm
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.session import TableSession
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign, load_campaign

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


@pytest.fixture
def llm() -> Iterator[InstantLlm]:
    """The scripted LLM server on its own loop thread (the CLI runs its own asyncio.run)."""
    yield from scripted_llm_on_a_thread()


def scripted_llm_on_a_thread() -> Iterator[InstantLlm]:
    """A scripted LLM server serving from its own loop thread until the generator closes."""
    loop = asyncio.new_event_loop()
    server = InstantLlm()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


@pytest.fixture
def campaign() -> Campaign:
    return load_campaign(EXAMPLE)


@pytest.fixture
def config() -> GlyphoxaConfig:
    return GlyphoxaConfig.model_validate({"campaign": {"hot_reload": False}})


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    try:
        yield store
    finally:
        await store.close()


class Table:
    """A started session over scripted providers plus its lockstep driver."""

    def __init__(self, session: TableSession, driver: TableDriver, engine: ScriptedEngine,
                 tts: ToneTts, metrics: Metrics) -> None:  # fmt: skip
        self.session = session
        self.driver = driver
        self.engine = engine
        self.tts = tts
        self.metrics = metrics


@pytest.fixture
async def table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Table]:
    """Speculation off: each test sees exactly the engine turns it scripts."""
    async for made in _table(config, campaign, memory, speculate=False):
        yield made


@pytest.fixture
async def speculating_table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Table]:
    async for made in _table(config, campaign, memory, speculate=True):
        yield made


@pytest.fixture
async def prefilling_table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Table]:
    async for made in _table(config, campaign, memory, speculate=True, prefill=True):
        yield made


async def _table(
    config: GlyphoxaConfig,
    campaign: Campaign,
    memory: MemoryStore,
    *,
    speculate: bool,
    prefill: bool = False,
) -> AsyncIterator[Table]:
    stt, tts, metrics = ToneStt(), ToneTts(), Metrics()
    engine = ScriptedEngine(replies={})
    session = build_session(
        config=config,
        campaign=campaign,
        stt=stt,
        tts=tts,
        engines=lambda npc: engine,
        memory=memory,
        metrics=metrics,
        vad_factory=EnergyVad,
        dm_speakers=["DM"],
        speculate=speculate,
        prefill=prefill,
    )
    await session.start()
    driver = TableDriver(session, stt, ["Arin", "Tobble", "DM"])
    try:
        yield Table(session, driver, engine, tts, metrics)
    finally:
        if engine.hold is not None:
            engine.hold.set()
        await session.stop()
