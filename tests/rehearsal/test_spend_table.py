"""A night's cost at a real table (``open_table``, real engines against the local
OpenAI-compatible server priced as a cloud model, real SQLite): kept with the session, so a
resumed session continues its total (and a total past the hard limit moves the NPCs to the
fallback again); ``on_hard: fast`` holds every NPC to FAST turns; a model without a price is
told to the DM once; a server that reports no usage is estimated, never silently free."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from table_script import ToneStt, ToneTts

from bot.bench.doubles.instant_llm import InstantLlm
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.table import open_table
from bot.table.session.session import TableSession
from campaigns.basics import Tier
from campaigns.memory import MemoryStore
from npcs.engines import CascadedEngine, TurnDone, TurnRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


def _config(
    tmp_path: Path,
    llm: Any,
    fallback: InstantLlm | None = None,
    *,
    priced: bool = True,
    **spend: Any,
) -> GlyphoxaConfig:
    if fallback is not None:
        spend["fallback"] = {"name": "local", "base_url": fallback.base_url, "model": "fallback"}
    prices = {"scripted": {"input_per_million": 1000, "output_per_million": 2000}}
    return GlyphoxaConfig.model_validate(
        {
            "providers": {"llm": {"name": "openai", "base_url": llm.base_url,
                                  "model": "scripted", "api_key": "scripted"}},
            "campaign": {"path": str(EXAMPLE), "hot_reload": False},
            "tools": {"sandbox_dir": str(tmp_path / "files"),
                      "calibration_path": str(tmp_path / "calibration.json")},
            "pricing": {"llm": prices if priced else {}},
            "session": {"spend": spend},
        }
    )  # fmt: skip


async def _answer(session: TableSession, text: str) -> str:
    """One of Bartok's turns through the engine the table gives him now."""
    npc = session.campaign.npcs["Bartok"]
    engine = session.engine_for(npc)
    assert engine is not None
    said = ""
    async for event in engine.respond(TurnRequest(npc, "Arin", text, Tier.FAST)):
        if isinstance(event, TurnDone):
            said = event.text
    return said


async def test_a_resumed_session_continues_its_total(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    async with InstantLlm() as llm, InstantLlm() as fallback:
        config = _config(tmp_path, llm, fallback, soft=0.1)
        table = open_table(
            config, memory_url=url, stt=ToneStt(), tts=ToneTts(), serve_metrics=False
        )
        async with table as session:
            assert await _answer(session, "what's on tap?")
            first = session.spend.total_usd
            session_id = session.recorder.session_id
            assert first > 0.1 and [
                a.message for a in session.trouble.alerts if "soft" in a.message
            ]
        store = await MemoryStore.open(url)
        try:
            rows = await store.session_usage(session_id)
        finally:
            await store.close()
        assert [(r["service"], r["model"], r["npc"]) for r in rows] == [
            ("llm", "scripted", "Bartok")
        ]
        assert rows[0]["cost_usd"] == pytest.approx(first) and rows[0]["input_tokens"] > 0

        # The night goes on after a restart; its hard limit is now below what it spent.
        config = _config(tmp_path, llm, fallback, soft=0.1, hard=first / 2)
        table = open_table(config, memory_url=url, stt=ToneStt(), tts=ToneTts(),
                           memory_session_id=session_id, serve_metrics=False)  # fmt: skip
        async with table as session:
            assert session.recorder.session_id == session_id
            assert session.spend.total_usd == pytest.approx(first)
            engine = session.engine_for(session.campaign.npcs["Bartok"])
            assert isinstance(engine, CascadedEngine) and engine.model == "fallback"
            told = [a.message for a in session.trouble.alerts]
            assert not [m for m in told if "soft limit" in m]  # warned once, before the restart
            assert [m for m in told if "every NPC now answers through fallback" in m]
            before = len(llm.requests)
            assert await _answer(session, "and a room?")
            assert len(llm.requests) == before and fallback.requests  # served by the fallback
            assert session.spend.total_usd == pytest.approx(first)  # the local model is free
            summary = session.spend.summary()
            assert summary["providers"]["LLM fallback"]["calls"] >= 1


async def test_on_hard_fast_holds_every_npc_to_fast_turns(tmp_path: Path) -> None:
    async with InstantLlm() as llm:
        config = _config(tmp_path, llm, hard=0.1, on_hard="fast")
        async with open_table(config, stt=ToneStt(), tts=ToneTts(), serve_metrics=False,
                              memory_url="sqlite+aiosqlite://") as session:  # fmt: skip
            assert await _answer(session, "what's on tap?")
            status = session.status().npcs
            assert {npc.override for npc in status.values()} == {"DM override fast for all NPCs"}
            told = [a.message for a in session.trouble.alerts]
            assert [m for m in told if "every NPC now answers at the FAST tier" in m]
            assert session.spend.summary()["hard_reached"]


async def test_a_server_on_this_machine_without_a_price_is_free_and_silent(
    tmp_path: Path,
) -> None:
    """An OpenAI-compatible server on localhost (Ollama, llama.cpp, vLLM) costs nothing per
    call: its use is counted, priced at 0, and the DM is not asked for a price."""
    async with InstantLlm() as llm:
        config = _config(tmp_path, llm, priced=False, soft=0.1)
        async with open_table(config, stt=ToneStt(), tts=ToneTts(), serve_metrics=False,
                              memory_url="sqlite+aiosqlite://") as session:  # fmt: skip
            assert await _answer(session, "what's on tap?")
            assert await _answer(session, "and a room?")
            assert not [a for a in session.trouble.alerts if "no price" in a.message]
            assert not [a for a in session.trouble.alerts if "soft limit" in a.message]
            (row,) = session.spend.rows.values()
            assert row.calls >= 2 and row.input_tokens > 0 and row.cost_usd == 0.0


async def test_usage_a_server_does_not_report_is_estimated(tmp_path: Path) -> None:
    """A server that never sends ``usage`` (an older OpenAI-compatible one): the turn's tokens
    are estimated from the prompt and the answer, and the DM's summary says so."""
    from tests.npcs.npcs_fake_openai import FakeOpenAI, Step

    async with FakeOpenAI(lambda body: Step(content="Dark ale, two coppers.")) as server:
        config = _config(tmp_path, server)
        async with open_table(config, stt=ToneStt(), tts=ToneTts(), serve_metrics=False,
                              memory_url="sqlite+aiosqlite://") as session:  # fmt: skip
            assert await _answer(session, "what's on tap?") == "Dark ale, two coppers."
            assert server.requests[0]["stream_options"] == {"include_usage": True}
            (row,) = session.spend.rows.values()
            assert row.estimated_calls == row.calls == 1
            assert row.input_tokens > 100 and row.output_tokens == 6  # 22 characters / 4
            assert row.cost_usd > 0 and session.spend.summary()["estimated"]
