"""Every built-in server: names match the contract, tiers match DESIGN, and they work through
the real tool host and through the ``glyphoxa serve-tool`` / ``python -m tools.builtin`` entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaigns.basics import GlyphoxaError, Tier
from tools.builtin import (
    BUILTIN_TOOL_NAMES,
    SERVER_NAMES,
    SERVER_TOOLS,
    build_tool_context,
    create_builtin_servers,
    create_server,
)
from tools.builtin.serve import tool_listing
from tools.config import BuiltinToolsConfig, McpConfig
from tools.host import ToolHost
from tools.host.latency import tier_for
from tools.spec import LATENCY_META_KEY, ToolContext

from .conftest import result_text, stdio_session

CONTRACT_TOOLS = {
    "roll", "roll_table", "search_rules", "get_rule", "search_sessions", "query_entities",
    "get_summary", "search_facts", "read_file", "write_file", "list_files", "list_sessions",
    "get_session_summary", "search_history", "play_track", "stop_music", "list_moods",
    "generate_image", "web_search", "fetch_page", "propose_memory",
}  # fmt: skip

EXPECTED_TIERS = {
    Tier.FAST: {
        "roll", "roll_table", "query_entities", "read_file", "write_file", "list_files",
        "play_track", "stop_music", "list_moods", "propose_memory",
    },
    Tier.STANDARD: {
        "search_sessions", "search_facts", "get_summary", "search_rules", "get_rule",
        "list_sessions", "get_session_summary", "search_history",
    },
    Tier.DEEP: {"generate_image", "web_search", "fetch_page"},
}  # fmt: skip


def test_names_match_the_contract() -> None:
    assert BUILTIN_TOOL_NAMES == CONTRACT_TOOLS
    assert SERVER_NAMES == (
        "dice",
        "rules",
        "memory",
        "files",
        "session",
        "ambience",
        "images",
        "web",
    )
    servers = create_builtin_servers(ToolContext())
    assert [s.name for s in servers] == list(SERVER_NAMES)
    for server in servers:
        assert tuple(t.name for t in server.tools) == SERVER_TOOLS[server.name]
    with pytest.raises(GlyphoxaError, match="choose from dice"):
        create_server("music", ToolContext())


def test_declared_latency_lands_in_the_design_tiers() -> None:
    for server in create_builtin_servers(ToolContext()):
        for tool in server.tools:
            tier = tier_for(tool.latency.estimated_duration_ms)
            assert tool.name in EXPECTED_TIERS[tier], (tool.name, tier)
            assert tool.latency.max_duration_ms is not None
            assert tool.latency.max_duration_ms <= 4000
            meta = tool_listing(tool).meta[LATENCY_META_KEY]
            assert meta["estimated_duration_ms"] == tool.latency.estimated_duration_ms
            assert tool.input_schema["additionalProperties"] is False


def test_idempotency_flags() -> None:
    tools = {t.name: t for s in create_builtin_servers(ToolContext()) for t in s.tools}
    assert not tools["roll"].latency.idempotent and not tools["generate_image"].latency.idempotent
    assert tools["search_rules"].latency.idempotent and tools["get_rule"].latency.read_only
    assert not tools["write_file"].latency.read_only


async def test_builtins_through_the_real_tool_host(tmp_path: Path, campaign_dir: Path) -> None:
    config = BuiltinToolsConfig(
        sandbox_dir=str(tmp_path / "files"), rules_db=str(tmp_path / "rules.db")
    )
    ctx = build_tool_context(config, campaign_dir=campaign_dir)
    async with ToolHost(McpConfig(), builtins=create_builtin_servers(ctx)) as host:
        listed = {info.name: info for info in host.list_tools()}
        assert set(listed) == CONTRACT_TOOLS
        for tier, names in EXPECTED_TIERS.items():
            assert {n for n, info in listed.items() if info.tier == tier} == names
        fast = {t.name for t in host.visible_tools(["*"], Tier.FAST)}
        assert fast == EXPECTED_TIERS[Tier.FAST]
        rolled = await host.call(
            "roll", {"expression": "2d6+3"}, whitelist=["roll"], tier=Tier.FAST, npc="bartok"
        )
        assert rolled.status == "ok" and 5 <= json.loads(rolled.content)["total"] <= 15
        bad = await host.call(
            "roll", {"expression": "2d6++"}, whitelist=["roll"], tier=Tier.FAST, npc="bartok"
        )
        assert bad.is_error and "two signs" in bad.content
        rules = await host.call(
            "search_rules", {"query": "grappled"}, whitelist=["*"], tier=Tier.STANDARD, npc="sage"
        )
        assert rules.status == "ok" and "summary:grappled" in rules.content


async def test_glyphoxa_serve_tool_and_module_entry(tmp_path: Path, campaign_dir: Path) -> None:
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        f"campaign:\n  path: {campaign_dir}\ntools:\n  sandbox_dir: {tmp_path / 'files'}\n",
        encoding="utf-8",
    )
    async with stdio_session("bot", "--config", str(config), "serve-tool", "dice") as session:
        table = await session.call_tool("roll_table", {"table_name": "tavern_rumours"})
        assert not table.is_error and "tavern_rumours" in result_text(table)
    async with stdio_session("tools.builtin", "files", "--sandbox", str(tmp_path / "s")) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"read_file", "write_file", "list_files"}


def test_glyphoxa_tools_list_shows_builtins_in_their_tiers(
    tmp_path: Path, campaign_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        f"campaign:\n  path: {campaign_dir}\n"
        f"memory:\n  url: sqlite+aiosqlite:///{tmp_path / 'memory.db'}\n"
        f"tools:\n  sandbox_dir: {tmp_path / 'files'}\n"
        f"  calibration_path: {tmp_path / 'calibration.json'}\n",
        encoding="utf-8",
    )
    assert main(["--config", str(config), "tools", "list", "--json"]) == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)["tools"]}
    assert set(listed) == CONTRACT_TOOLS
    for tier, names in EXPECTED_TIERS.items():
        assert {n for n, t in listed.items() if t["tier"] == tier.label} == names
    assert all(t["healthy"] for t in listed.values())
    assert listed["roll"]["idempotent"] is False and listed["get_rule"]["idempotent"] is True
