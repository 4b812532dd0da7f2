"""``glyphoxa serve-tool dice --http``: a built-in as a remote MCP server, used by the mcp SDK's
own client and by the tool host exactly like the local built-in."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bot.cli import main
from campaigns.basics import Tier
from tools.builtin import create_server
from tools.config import McpConfig, McpServerConfig
from tools.host import ToolHost
from tools.spec import ToolContext

REPO = Path(__file__).resolve().parents[2]
TOKEN = "remote-dice-token-value"


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("serve-http")
    config = {
        "campaign": {"path": str(REPO / "campaigns" / "example")},
        "memory": {"url": f"sqlite+aiosqlite:///{folder / 'memory.db'}"},
        "tools": {"sandbox_dir": str(folder / "files")},
    }
    path = folder / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
async def dice_url(config_path: Path) -> AsyncIterator[str]:
    """``glyphoxa serve-tool dice --http 127.0.0.1:0 --bearer-token-env DICE_TOKEN``."""
    glyphoxa = Path(sys.executable).with_name("glyphoxa")
    process = await asyncio.create_subprocess_exec(
        str(glyphoxa),
        "-c",
        str(config_path),
        "serve-tool",
        "dice",
        "--http",
        "127.0.0.1:0",
        "--bearer-token-env",
        "DICE_TOKEN",
        env={**os.environ, "DICE_TOKEN": TOKEN},
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(60):
            line = (await process.stderr.readline()).decode()
        match = re.search(r"at (http://\S+/mcp)", line)
        assert match, line
        yield match.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(20):
            code = await process.wait()
        assert code in (0, 130), code


def bearer_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})


async def test_sdk_client_lists_and_calls_remote_dice(dice_url: str):
    async with (
        bearer_client() as http,
        Client(streamable_http_client(dice_url, http_client=http)) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"roll", "roll_table"}
        assert tools["roll"].meta["io.glyphoxa/latency"]["max_duration_ms"] == 300
        assert tools["roll"].annotations.read_only_hint is True
        result = await client.call_tool("roll", {"expression": "2d6+3"})
        assert not result.is_error and 5 <= result.structured_content["total"] <= 15
        refused = await client.call_tool("roll", {"expression": "2d6+"})
        assert refused.is_error


async def test_remote_dice_refuses_requests_without_the_token(dice_url: str):
    async with httpx2.AsyncClient() as http:
        response = await http.post(dice_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_host_uses_remote_dice_like_the_local_one(dice_url: str, tmp_path: Path):
    local = create_server("dice", ToolContext(campaign_dir=REPO / "campaigns" / "example"))
    remote = McpServerConfig.model_validate(
        {
            "name": "dice",
            "transport": "streamable-http",
            "url": dice_url,
            "auth": {"type": "bearer", "token": TOKEN},
        }
    )
    async with ToolHost(builtins=[local]) as near, ToolHost(McpConfig(servers=[remote])) as far:
        assert far.server_states()["dice"]["state"] == "up"
        for name in ("roll", "roll_table"):
            mine, theirs = near.get_tool(name), far.get_tool(name)
            assert (theirs.tier, theirs.timeout_ms, theirs.latency) == (
                mine.tier,
                mine.timeout_ms,
                mine.latency,
            )
            assert (theirs.description, theirs.input_schema) == (
                mine.description,
                mine.input_schema,
            )
        for host in (near, far):
            result = await host.call(
                "roll", {"expression": "1d20+5"}, whitelist=["roll"], tier=Tier.FAST, npc="Bartok"
            )
            assert result.status == "ok" and set(result.structured) >= {"total", "breakdown"}
            missing = await host.call(
                "roll_table", {"table_name": "nope"}, whitelist=["*"], tier=Tier.FAST, npc="Bartok"
            )
            assert missing.status == "error" and "nope" in missing.content
        assert far.get_tool("roll_table").error_rate == 0.0  # bad input is not a failure


def test_open_server_on_the_network_needs_a_token(config_path: Path, capsys):
    argv = ["-c", str(config_path), "serve-tool", "dice", "--http", "0.0.0.0:0"]
    assert main(argv) == 2
    assert "without a bearer token" in capsys.readouterr().err
    assert main(["-c", str(config_path), "serve-tool", "dice", "--http", "nowhere"]) == 2
    assert "--http expects HOST:PORT" in capsys.readouterr().err


async def test_remote_builtin_crash_counts_but_its_clear_refusal_does_not():
    """Served over HTTP, a built-in's crash still counts against its health and its ToolError
    (bad input) still does not: the host tells them apart as it does in-process."""
    from tools.builtin.serve_http import serve_http
    from tools.spec import BuiltinServer, LatencyMeta, ToolDef, ToolError

    async def boom() -> str:
        raise RuntimeError("kaboom")

    async def oops() -> str:
        raise ToolError("no table named 'loot'")

    schema = {"type": "object", "properties": {}}
    meta = LatencyMeta(5, 500)
    server = BuiltinServer(
        "fragile",
        [ToolDef("boom", "Crash.", schema, boom, meta), ToolDef("oops", "No.", schema, oops, meta)],
    )
    ready: asyncio.Queue[str] = asyncio.Queue()
    serving = asyncio.create_task(serve_http(server, "127.0.0.1", 0, on_ready=ready.put_nowait))
    try:
        url = await asyncio.wait_for(ready.get(), 20)
        config = McpServerConfig(name="fragile", transport="streamable-http", url=url)
        async with ToolHost(McpConfig(servers=[config])) as host:
            for _ in range(5):
                crashed = await host.call("boom", {}, whitelist=["*"], tier=Tier.DEEP, npc="n")
                refused = await host.call("oops", {}, whitelist=["*"], tier=Tier.DEEP, npc="n")
                assert crashed.is_error and refused.is_error
            assert host.get_tool("boom").error_rate == 1.0 and host.get_tool("boom").demoted
            assert host.get_tool("oops").error_rate == 0.0
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
