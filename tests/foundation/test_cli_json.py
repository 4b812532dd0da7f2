"""``--json`` wherever a command prints data: the documented shapes, parsed back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.settings.loader import load_config
from bot.table.assembly.memory import open_memory

from .foundation_support import EXAMPLE


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config whose memory holds one ended session and one approved, one pending fact."""
    folder = tmp_path_factory.mktemp("json")
    url = f"sqlite+aiosqlite:///{folder / 'memory.db'}"
    config = folder / "glyphoxa.yaml"
    config.write_text(
        f"campaign:\n  path: {EXAMPLE}\nmemory:\n  url: {url}\n"
        f"tools:\n  calibration_path: {folder / 'calibration.json'}\n"
    )

    async def record() -> None:  # as the first session does: opened and seeded like the bot
        store = await open_memory(load_config(config), summarize=False)
        session = await store.start_session("emberford", "Night at the Flagon")
        line = "Bartok, what's on tap?"
        await store.add_utterance(session, "Arin", line, started_at=0, ended_at=1)
        await store.end_session(session, summary="Bartok hinted that the old mill is busy.")
        approved = await store.propose_fact("Bartok", "The mill wheel turns backwards.")
        await store.approve_fact(approved)
        await store.propose_fact("Bartok", "Vessa owes him money.")
        await store.close()

    asyncio.run(record())
    return config


def _json(capsys: pytest.CaptureFixture[str], config: Path, *argv: str) -> Any:
    assert main(["-c", str(config), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_memory_entity_and_facts(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entity = _json(capsys, recorded, "memory", "entity", "bartok")
    assert (entity["id"], entity["name"], entity["type"]) == ("bartok", "Bartok", "npc")
    assert {"description", "attributes", "relations", "facts"} <= set(entity)
    assert any(r["entity"]["id"] == "the-rusty-flagon" for r in entity["relations"])
    pending = _json(capsys, recorded, "memory", "proposals")
    assert [(f["npc"], f["text"], f["status"]) for f in pending] == [
        ("Bartok", "Vessa owes him money.", "pending")
    ]
    every = _json(capsys, recorded, "memory", "proposals", "--status", "all")
    assert [f["status"] for f in every] == ["approved", "pending"]


def test_recap(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recap = _json(capsys, recorded, "recap", "--sessions", "2")
    [session] = recap["sessions"]
    assert session["title"] == "Night at the Flagon"
    assert session["summary"] == "Bartok hinted that the old mill is busy."
    assert {"id", "started_at", "ended_at", "utterances", "speakers", "npcs"} <= set(session)


def test_rules_search_and_get(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(recorded.parent / "rules.db")
    hits = _json(capsys, recorded, "rules", "search", "grappled", "--db", db)
    assert hits and set(hits[0]) == {"id", "name", "category", "source", "snippet"}
    entry = _json(capsys, recorded, "rules", "get", hits[0]["id"], "--db", db)
    assert entry["id"] == hits[0]["id"] and entry["text"]
    assert set(entry) == {"id", "name", "category", "source", "system", "text"}


def test_tools_list(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _json(capsys, recorded, "tools", "list", "--npc", "Bartok")
    assert set(document) == {"tools", "servers", "collisions"}
    names = [tool["name"] for tool in document["tools"]]
    assert "roll" in names and "search_rules" not in names  # Bartok's whitelist at fast
    assert all(tool["tier"] == "fast" for tool in document["tools"])


def test_npc_list_and_show(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npcs = _json(capsys, recorded, "npc", "list")
    assert [n["name"] for n in npcs] == ["Bartok", "Captain Vessa", "Greymantle", "Whisper"]
    bartok = npcs[0]
    assert bartok["file"] == str(EXAMPLE / "npcs" / "bartok.yaml")
    assert (bartok["engine"], bartok["budget_tier"]) == ("cascaded", "fast")
    assert set(bartok) == {
        "name", "file", "aliases", "engine", "budget_tier", "voice", "tools", "address_only"
    }  # fmt: skip
    view = _json(capsys, recorded, "npc", "show", "the sage")  # an alias finds Greymantle
    assert view["name"] == "Greymantle" and view["budget_tier"] == "deep"
    assert [t["selected"] for t in view["tiers"]] == ["fast", "standard", "deep"]
    assert view["memory"] == {
        "database": f"sqlite+aiosqlite:///{recorded.parent / 'memory.db'}",
        "exists": True,
        "sessions": 1,
        "approved_facts": 1,
    }
    candle = next(n for n in view["campaign_notes"] if n["id"] == "black-candle")
    assert candle["note"] == "- Black Candle (faction): " + (
        "A secret society smuggling shadow-touched relics."
    )
    assert candle["triggers"] == ["Black Candle"]
    only = _json(capsys, recorded, "npc", "show", "Greymantle", "--tier", "fast")
    assert [t["selected"] for t in only["tiers"]] == ["fast"]
