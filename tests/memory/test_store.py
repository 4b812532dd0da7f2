"""Transcripts, chunks, full-text search, sessions, recaps and tool tables on both databases."""

from __future__ import annotations

import time

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from campaigns.basics import GlyphoxaError
from campaigns.memory import MemoryStore
from campaigns.memory.database import create_engine
from campaigns.memory.models import Base

LINES = [
    ("Arin", None, "Bartok, what's on tap tonight?"),
    ("Bartok", "Bartok", "Dark ale from the Emberford brewery, and a cider that bites back."),
    ("Tobble", None, "Have you heard anything about the old mill grinding at night?"),
    ("Bartok", "Bartok", "The mill? Folks say the Black Candle meets there after midnight."),
    ("Arin", None, "Then we go to the mill tonight."),
    ("Tobble", None, "I'll pay for the ale later, promise."),
    ("Bartok", "Bartok", "Your debts are piling up, halfling."),
]


async def _record(store: MemoryStore, campaign: str = "emberford", title: str = "one") -> str:
    session = await store.start_session(campaign, title)
    now = time.time()
    for i, (speaker, npc, line) in enumerate(LINES):
        await store.add_utterance(
            session, speaker, line, npc=npc, started_at=now + i, ended_at=now + i + 0.8,
            tier="fast" if npc else None, interrupted=i == 3,
        )  # fmt: skip
    return session


async def test_utterances_round_trip_and_search_ranks_relevant_line_first(
    store: MemoryStore,
) -> None:
    session = await _record(store)
    hits = await store.search_sessions("who meets at the mill after midnight")
    assert hits[0]["text"].startswith("The mill? Folks say the Black Candle")
    assert hits[0]["npc"] == "Bartok" and hits[0]["interrupted"] is True
    assert hits[0]["tier"] == "fast" and hits[0]["session_id"] == session
    assert {h["text"] for h in hits} >= {"Then we go to the mill tonight."}
    assert await store.search_sessions("the of and") == []  # only stop words
    assert await store.search_sessions('"; DROP TABLE utterances; --') == []
    for awkward in ("NEAR AND OR NOT", "über-café ünïcode", "bartok*", "mill^2 (docks)", "a" * 300):
        await store.search_sessions(awkward)  # never a syntax error from FTS5 or to_tsquery
    assert (await store.search_sessions("MILL"))[0]["text"]
    assert await store.count("utterances") == len(LINES)


async def test_search_can_be_limited_to_one_session(store: MemoryStore) -> None:
    first = await _record(store, title="one")
    second = await _record(store, title="two")
    assert len(await store.search_sessions("mill")) == 6
    only_second = await store.search_sessions("mill", session_id=second)
    assert len(only_second) == 3 and {h["session_id"] for h in only_second} == {second}
    assert first != second
    assert len(await store.search_sessions("mill", limit=2)) == 2


async def test_unknown_session_is_a_clear_error(store: MemoryStore) -> None:
    with pytest.raises(GlyphoxaError, match="unknown session"):
        await store.add_utterance("nope", "Arin", "hello", started_at=0.0, ended_at=1.0)
    with pytest.raises(GlyphoxaError, match="unknown session"):
        await store.end_session("nope")
    with pytest.raises(GlyphoxaError, match="unknown session"):
        await store.session_summary("zzzz")


async def test_chunks_hold_three_to_six_utterances(memory_url: str) -> None:
    for total in (1, 3, 5, 7, 8, 11, 12, 23):
        store = await MemoryStore.open(memory_url, chunk_utterances=5)
        session = await store.start_session("c", f"{total} lines")
        for i in range(total):
            await store.add_utterance(session, "P", f"line {i}", started_at=i, ended_at=i + 1)
        await store.end_session(session)
        async with store._read() as conn:
            sizes = (
                (
                    await conn.execute(
                        text(
                            "SELECT count(*) FROM utterances WHERE session_id = :s "
                            "GROUP BY chunk_id ORDER BY chunk_id"
                        ),
                        {"s": session},
                    )
                )
                .scalars()
                .all()
            )
        await store.close()
        assert sum(sizes) == total, (total, sizes)
        assert all(size <= 6 for size in sizes), (total, sizes)
        if total >= 3:
            assert all(size >= 3 for size in sizes), (total, sizes)


async def test_end_session_summary_list_and_recap(store: MemoryStore) -> None:
    first = await _record(store, title="The Rusty Flagon")
    await store.end_session(first)
    second = await store.start_session("emberford", "The Old Mill")
    await store.add_utterance(second, "Arin", "The mill wheel turns by itself.", started_at=1,
                              ended_at=2)  # fmt: skip
    await store.end_session(second, summary="The party found the Black Candle at the mill.")
    sessions = await store.list_sessions()
    assert [s["title"] for s in sessions] == ["The Old Mill", "The Rusty Flagon"]
    assert sessions[1]["utterances"] == len(LINES) and sessions[1]["has_summary"]
    summary = await store.session_summary(first[:8])
    assert summary["summary_source"] == "extractive"
    assert "Bartok" in summary["summary"] and summary["npcs"] == ["Bartok"]
    assert summary["speakers"] == ["Arin", "Tobble"]
    assert (await store.session_summary(second))["summary_source"] == "dm"
    recap = await store.recap(2)
    assert recap.index('"The Rusty Flagon"') < recap.index('"The Old Mill"')
    assert "Black Candle at the mill" in recap
    assert '"The Rusty Flagon"' not in await store.recap(1)
    history = await store.search_history("Black Candle")
    assert history[0]["session_id"] == second and history[0]["title"] == "The Old Mill"
    with pytest.raises(GlyphoxaError):
        await store.recap(0)


async def test_running_session_gets_a_live_summary(store: MemoryStore) -> None:
    session = await _record(store)
    summary = await store.session_summary(session)
    assert summary["summary_source"] == "extractive-live" and summary["ended_at"] is None


async def test_tool_log_and_calibration(store: MemoryStore) -> None:
    await store.log_tool_call(npc="Greymantle", tool="search_rules", tier="standard",
                              status="ok", duration_ms=120.5, session_id="s1")  # fmt: skip
    await store.log_tool_call(npc="Bartok", tool="roll", tier="fast", status="timeout",
                              duration_ms=501)  # fmt: skip
    calls = await store.tool_calls()
    assert [c["tool"] for c in calls] == ["roll", "search_rules"]
    assert calls[1]["duration_ms"] == 120.5 and calls[0]["session_id"] is None
    assert await store.load_calibration("laptop") == {}
    await store.save_calibration("laptop", "roll", [(1.5, True), (900.0, False)])
    await store.save_calibration("laptop", "web_search", [(1200.0, True)])
    await store.save_calibration("ci", "roll", [(3.0, True)])
    await store.save_calibration("laptop", "roll", [(2.0, True)])  # replaces the window
    assert await store.load_calibration("laptop") == {
        "roll": [(2.0, True)],
        "web_search": [(1200.0, True)],
    }


async def test_reopen_keeps_data_and_schema_matches_models(memory_url: str) -> None:
    store = await MemoryStore.open(memory_url)
    session = await _record(store)
    await store.close()
    store = await MemoryStore.open(memory_url)  # migrations already at head: no-op
    assert len(await store.search_sessions("ale", session_id=session)) == 2
    await store.close()
    engine = create_engine(memory_url)
    async with engine.connect() as conn:
        version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()

        def diff(sync_conn):  # type: ignore[no-untyped-def]
            from campaigns.memory.database import include_object

            context = MigrationContext.configure(sync_conn, opts={"include_object": include_object})
            return compare_metadata(context, Base.metadata)

        differences = await conn.run_sync(diff)
    await engine.dispose()
    assert version == "0007"
    assert differences == []


async def test_bad_url_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(GlyphoxaError, match="not a database URL"):
        await MemoryStore.open("definitely not a url")
    with pytest.raises(GlyphoxaError, match="only sqlite and postgresql"):
        await MemoryStore.open("mysql+aiomysql://x@localhost/db")
    with pytest.raises(GlyphoxaError, match="cannot open campaign memory"):
        await MemoryStore.open("postgresql+asyncpg://nobody@127.0.0.1:9/none")


async def test_session_usage_is_kept_whole_and_read_back(store: MemoryStore) -> None:
    """The spend meter's rows: written whole (a second write replaces the first), read back
    most expensive first."""
    session = await store.start_session("test", "a costly night")
    row = {
        "service": "llm", "model": "gpt-4o-mini", "npc": "Bartok", "calls": 3,
        "estimated_calls": 1, "input_tokens": 4_500_000_000, "output_tokens": 900,
        "audio_input_tokens": 0, "audio_output_tokens": 0, "characters": 0,
        "audio_seconds": 0.0, "cost_usd": 0.0012,
    }  # fmt: skip
    ears = {**row, "service": "stt", "model": "whisper-1", "npc": "", "calls": 9,
            "estimated_calls": 0, "input_tokens": 0, "output_tokens": 0,
            "audio_seconds": 41.5, "cost_usd": 0.0042}  # fmt: skip
    await store.save_usage(session, [row])
    await store.save_usage(session, [{**row, "calls": 4}, ears])
    assert await store.session_usage(session) == [ears, {**row, "calls": 4}]
    assert await store.session_usage("no-such-session") == []
