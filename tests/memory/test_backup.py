"""JSON backup: a full round trip, merging, and bad files refused without changing anything."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from campaigns.basics import GlyphoxaError
from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore


async def _fill(store: MemoryStore, entities: EntitiesFile) -> str:
    await store.seed_entities(entities)
    session = await store.start_session("emberford", "Backup night")
    for i in range(8):
        await store.add_utterance(
            session, "Arin" if i % 2 else "Bartok", f"line {i} about the silver crypt",
            npc=None if i % 2 else "Bartok", started_at=i, ended_at=i + 0.5, tier="fast",
        )  # fmt: skip
    await store.end_session(session)
    fact = await store.propose_fact("Bartok", "The crypt key hangs behind the bar.",
                                    entity_id="bartok")  # fmt: skip
    await store.approve_fact(fact)
    await store.propose_fact("Whisper", "The willow sings at dawn.")
    await store.log_tool_call(npc="Bartok", tool="roll", tier="fast", status="ok",
                              duration_ms=2.0, session_id=session)  # fmt: skip
    await store.save_calibration("laptop", "roll", [(2.0, True), (3.0, False)])
    await store.bind_character("emberford", "123456789012345678", "Arin", bound_by="Dana")
    return session


async def _snapshot(store: MemoryStore) -> dict[str, Any]:
    sessions = await store.list_sessions()
    return {
        "sessions": [(s["id"], s["title"], s["utterances"]) for s in sessions],
        "summaries": [(await store.session_summary(s["id"]))["summary"] for s in sessions],
        "lines": sorted(h["text"] for h in await store.search_sessions("crypt", limit=100)),
        "facts": sorted((f["npc"], f["text"], f["status"]) for f in await store.list_facts(None)),
        "recall": sorted(h["text"] for h in await store.search_facts("crypt", top_k=50)),
        "entities": sorted(e["id"] for e in await store.query_entities()),
        "bartok": await store.get_summary("bartok"),
        "calls": [(c["npc"], c["tool"]) for c in await store.tool_calls()],
        "calibration": await store.load_calibration("laptop"),
        "characters": [
            (b.user_id, b.character, b.bound_by)
            for b in await store.character_bindings("emberford")
        ],
    }


async def test_export_import_round_trip_and_second_import_is_a_no_op(
    memory_url: str, tmp_path: Path, example_entities: EntitiesFile
) -> None:
    source = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'source.db'}")
    await _fill(source, example_entities)
    counts = await source.export_json(tmp_path / "backup.json")
    expected = await _snapshot(source)
    await source.close()
    described = sum(1 for e in example_entities.entities if e.description.strip())
    assert counts["utterances"] == 8 and counts["chunks"] == 3 + described  # + "entity" chunks

    target = await MemoryStore.open(memory_url)  # both backends: SQLite -> PostgreSQL migration
    report = await target.import_json(tmp_path / "backup.json")
    assert report.sessions_added == 1 and report.utterances == 8 and report.chunks == 3 + described
    assert report.characters == 1 and expected["characters"] == [
        ("123456789012345678", "Arin", "Dana")
    ]
    assert await _snapshot(target) == expected
    again = await target.import_json(tmp_path / "backup.json")
    assert again.sessions_added == 0 and again.sessions_skipped == 1 and again.utterances == 0
    assert again.facts == 0 and again.tool_invocations == 0 and again.chunks == 0
    assert again.characters == 0  # the binding held is as new as the file's
    assert await _snapshot(target) == expected
    await target.close()


def _valid_document() -> dict[str, Any]:
    now = time.time()
    return {
        "format": "glyphoxa-memory",
        "version": 1,
        "exported_at": now,
        "tables": {
            "sessions": [{"id": "s1", "campaign": "c", "title": "t", "started_at": now}],
            "utterances": [
                {
                    "id": 1,
                    "session_id": "s1",
                    "speaker": "Arin",
                    "text": "imported line",
                    "started_at": now,
                    "ended_at": now,
                    "interrupted": False,
                    "chunk_id": None,
                }
            ],
            "entities": [{"id": "bartok", "name": "Bartok", "type": "npc"}],
        },
    }


BAD_FILES: dict[str, tuple[Any, str]] = {
    "not json": ("{ this is not json", r"bad\.json:1:3: not valid JSON"),
    "wrong format": ({"format": "something-else"}, "not a Glyphoxa memory backup"),
    "missing field": (
        lambda d: d["tables"]["utterances"][0].pop("text"),
        r"tables\.utterances\[0\]\.text: Field required",
    ),
    "wrong type": (
        lambda d: d["tables"]["sessions"][0].update(started_at="yesterday"),
        r"tables\.sessions\[0\]\.started_at",
    ),
    "unknown column": (
        lambda d: d["tables"]["entities"][0].update(colour="red"),
        r"tables\.entities\[0\]\.colour: Extra inputs are not permitted",
    ),
    "dangling session": (
        lambda d: d["tables"]["utterances"][0].update(session_id="nope"),
        "is not in tables.sessions",
    ),
    "unknown entity in relation": (
        lambda d: d["tables"].update(
            relations=[{"source_id": "bartok", "type": "knows", "target_id": "ghost"}]
        ),
        "unknown entity 'ghost'",
    ),
    "duplicate ids": (
        lambda d: d["tables"]["utterances"].append(dict(d["tables"]["utterances"][0])),
        "duplicate ids",
    ),
    "future version": (lambda d: d.update(version=99), r"version"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
async def test_bad_import_is_refused_and_changes_nothing(
    store: MemoryStore, tmp_path: Path, example_entities: EntitiesFile, case: str
) -> None:
    await _fill(store, example_entities)
    before = await _snapshot(store)
    change, message = BAD_FILES[case]
    path = tmp_path / "bad.json"
    if isinstance(change, str):
        path.write_text(change)
    elif isinstance(change, dict):
        path.write_text(json.dumps(change))
    else:
        document = _valid_document()
        change(document)
        path.write_text(json.dumps(document))
    with pytest.raises(GlyphoxaError, match=message):
        await store.import_json(path)
    assert await _snapshot(store) == before
    assert await store.count("utterances") == 8


async def test_missing_file_is_a_clear_error(store: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(GlyphoxaError, match="no such file"):
        await store.import_json(tmp_path / "absent.json")
