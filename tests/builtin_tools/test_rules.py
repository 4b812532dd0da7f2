"""Rules lookup over our summary and the real SRD 5.1 JSON; in-process and over MCP stdio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from campaigns.basics import GlyphoxaError
from tools.builtin import create_server
from tools.builtin.rules import build_index, import_srd, open_index
from tools.builtin.rules_index import RulesIndex
from tools.builtin.rules_sources import SUMMARY_PATH, load_srd, load_summary
from tools.config import BuiltinToolsConfig
from tools.settings import BuiltinSettings
from tools.spec import ToolContext, ToolError

from .conftest import SRD_PATH, result_text, stdio_session

pytestmark = pytest.mark.skipif(not SRD_PATH.is_dir(), reason="SRD 5.1 test data not present")


@pytest.fixture(scope="module")
def srd_index() -> RulesIndex:
    return build_index(SRD_PATH)


def test_summary_has_enough_entries_with_unique_ids() -> None:
    data = yaml.safe_load(SUMMARY_PATH.read_text())
    ids = [e["id"] for e in data["entries"]]
    assert len(ids) >= 60 and len(ids) == len(set(ids))
    categories = {e["category"] for e in data["entries"]}
    assert {"condition", "combat", "action", "resting", "spellcasting"} <= categories
    assert all(len(e["text"]) > 20 for e in data["entries"])


def test_srd_ids_are_category_prefixed_and_unique() -> None:
    docs = list(load_srd(SRD_PATH))
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids))
    assert {"spell:shield", "equipment:shield", "condition:blinded", "monster:goblin"} <= set(ids)
    assert {"rule:combat", "rule-section:cover", "magic-item:bag-of-holding"} <= set(ids)
    assert sum(1 for i in ids if i.startswith("condition:")) == 15
    assert sum(1 for i in ids if i.startswith("spell:")) == 319


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("fire ball", "spell:fireball"),
        ("fireball", "spell:fireball"),
        ("magic missile", "spell:magic-missile"),
        ("what does prone do", "summary:prone"),
        ("bag of holding", "magic-item:bag-of-holding"),
        ("goblin", "monster:goblin"),
        ("long sword", "equipment:longsword"),
        ("hold person", "spell:hold-person"),
    ],
)
def test_spoken_queries_find_the_entry_first(
    srd_index: RulesIndex, query: str, expected: str
) -> None:
    assert srd_index.search(query, limit=3)[0].id == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [("magik missle", "spell:magic-missile"), ("owlbaer", "monster:owlbear")],
)
def test_misheard_names_fall_back_to_spelling(
    srd_index: RulesIndex, query: str, expected: str
) -> None:
    assert srd_index.search(query, limit=3)[0].id == expected


def test_grapple_finds_the_grappled_condition(srd_index: RulesIndex) -> None:
    ids = [h.id for h in srd_index.search("grapple", limit=5)]
    assert "condition:grappled" in ids and "summary:grappled" in ids[:2]


def test_category_filter_and_empty_result(srd_index: RulesIndex) -> None:
    hits = srd_index.search("shield", category="spell", limit=5)
    assert hits and all(h.category == "spell" for h in hits)
    assert hits[0].id == "spell:shield"
    assert srd_index.search("zzxxqq", limit=5) == []


def test_import_writes_cache_that_open_reuses(tmp_path: Path) -> None:
    db = tmp_path / "rules.db"
    counts = import_srd(SRD_PATH, db)
    assert counts["srd_entries"] > 1300 and counts["summary_entries"] >= 60
    index = open_index(None, db)
    try:
        assert index.get("spell:fireball") is not None
        assert index.count("srd5.1") == counts["srd_entries"]
    finally:
        index.close()


def test_summary_only_without_srd(tmp_path: Path) -> None:
    index = open_index(None, tmp_path / "absent.db")
    try:
        assert index.count() == len(load_summary())
        assert index.search("cover")[0].id == "summary:cover"
    finally:
        index.close()
    assert not (tmp_path / "absent.db").exists()


def test_import_of_wrong_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GlyphoxaError, match="does not exist"):
        import_srd(tmp_path / "missing", tmp_path / "r.db")
    (tmp_path / "empty").mkdir()
    with pytest.raises(GlyphoxaError, match=r"missing 5e-SRD-Conditions\.json"):
        import_srd(tmp_path / "empty", tmp_path / "r.db")


async def test_tools_in_process(tmp_path: Path) -> None:
    config = BuiltinToolsConfig(srd_path=str(SRD_PATH), rules_db=str(tmp_path / "r.db"))
    ctx = ToolContext(settings=BuiltinSettings.from_config(config))
    server = create_server("rules", ctx)
    await server.startup()
    try:
        tools = {t.name: t for t in server.tools}
        found = await tools["search_rules"].handler(query="fire ball", system="D&D 5e", limit=3)
        assert found["results"][0]["id"] == "spell:fireball"
        rule = await tools["get_rule"].handler(id="condition:blinded")
        assert "can't see" in rule["text"] and "CC-BY-4.0" in rule["attribution"]
        long_rule = await tools["get_rule"].handler(id="rule-section:traps")
        assert long_rule.get("truncated") is True and len(long_rule["text"]) == 6000
        with pytest.raises(ToolError, match=r"did you mean.*spell:fireball"):
            await tools["get_rule"].handler(id="spell:firebal")
        with pytest.raises(ToolError, match="available: dnd5e"):
            await tools["search_rules"].handler(query="x", system="pathfinder")
        with pytest.raises(ToolError, match="unknown category"):
            await tools["search_rules"].handler(query="x", category="vehicles")
        with pytest.raises(ToolError, match="limit"):
            await tools["search_rules"].handler(query="x", limit=0)
    finally:
        await server.shutdown()


async def test_tools_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    import_srd(SRD_PATH, db)
    async with stdio_session("tools.builtin", "rules", "--set", f"rules_db={db}") as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        meta = listing["search_rules"].meta["io.glyphoxa/latency"]
        assert meta["idempotent"] is True and meta["read_only"] is True
        assert 500 < meta["estimated_duration_ms"] <= 1500
        result = await session.call_tool("search_rules", {"query": "grapple"})
        assert not result.is_error
        ids = [r["id"] for r in json.loads(result_text(result))["results"]]
        assert "condition:grappled" in ids
        rule = await session.call_tool("get_rule", {"id": "spell:fireball"})
        assert "8d6 fire damage" in result_text(rule)
        bad = await session.call_tool("get_rule", {"id": "spell:nothing-like-this"})
        assert bad.is_error and "no rule with id" in result_text(bad)
        wrong = await session.call_tool("search_rules", {"query": 5})
        assert wrong.is_error and "query" in result_text(wrong)


def test_stale_cache_is_rebuilt_from_its_srd_folder(tmp_path: Path) -> None:
    db = tmp_path / "rules.db"
    import_srd(SRD_PATH, db)
    stale = RulesIndex.load(db)
    stale.set_meta("summary_hash", "old")
    stale.save(db)
    stale.close()
    index = open_index(None, db)
    try:
        assert index.count("srd5.1") > 1300 and index.get_meta("summary_hash") != "old"
    finally:
        index.close()
    again = RulesIndex.load(db)
    try:
        assert again.get_meta("summary_hash") != "old"  # the rebuilt cache was written back
    finally:
        again.close()
