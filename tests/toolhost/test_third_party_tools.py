"""Third-party behaviour the host must get right: tasks, bad input vs. protocol failures,
caching by annotations. Against the npm everything server and a TypeScript-SDK server of ours."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from campaigns.basics import Tier
from tools.config import McpServerConfig
from tools.host import ToolHost
from tools.host.calibration import MIN_SAMPLES

ALL = ["*"]
STDIO_SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


def stdio(name: str, command: list[str], **extra: object) -> McpServerConfig:
    extra.setdefault("call_timeout_s", 10)
    return McpServerConfig(
        name=name, transport="stdio", command=command, connect_timeout_s=30, **extra
    )


async def call(host: ToolHost, name: str, arguments: dict) -> object:
    return await host.call(name, arguments, whitelist=ALL, tier=Tier.DEEP, npc="Greymantle")


async def test_task_required_tool_runs_as_a_task(everything_host: ToolHost):
    info = everything_host.get_tool("simulate-research-query")
    assert info.task_support == "required" and not info.needs_tasks
    assert "simulate-research-query" in [
        t.name for t in everything_host.visible_tools(ALL, Tier.DEEP)
    ]
    result = await call(everything_host, "simulate-research-query", {"topic": "dragons"})
    assert result.status == "ok", result.content
    assert "# Research Report: dragons" in result.content


async def test_task_call_past_its_deadline_is_cancelled_on_the_server(
    make_host: Callable[..., ToolHost], everything_command: list[str]
):
    host = make_host(stdio("ev-short", everything_command, call_timeout_s=1.5))
    await host.start()
    assert await host.wait_for(lambda h: h.get_tool("simulate-research-query") is not None, 30)
    result = await call(host, "simulate-research-query", {"topic": "x"})
    assert result.status == "timeout"
    assert host.server_states()["ev-short"]["state"] == "up"  # the connection survived


async def test_task_tool_without_tasks_capability_is_hidden(
    make_host: Callable[..., ToolHost], legacy_command: list[str]
):
    host = make_host(stdio("legacy", legacy_command))
    await host.start()
    info = host.get_tool("background")
    assert info.task_support == "required" and info.needs_tasks
    assert "background" not in [t.name for t in host.visible_tools(ALL, Tier.DEEP)]
    result = await call(host, "background", {})
    assert result.is_error and "needs MCP tasks" in result.content


async def test_bad_input_never_demotes_a_third_party_tool(everything_host: ToolHost):
    for _ in range(MIN_SAMPLES + 1):  # a model insisting on a resource that does not exist
        bad = await call(everything_host, "get-resource-reference", {"resourceId": 0})
        assert bad.status == "error" and "Invalid resourceId" in bad.content
    info = everything_host.get_tool("get-resource-reference")
    assert info.error_rate == 0.0 and not info.demoted


async def test_invalid_params_vs_protocol_failure(
    make_host: Callable[..., ToolHost], legacy_command: list[str]
):
    host = make_host(stdio("legacy", legacy_command))
    await host.start()
    for _ in range(MIN_SAMPLES):
        picky = await call(host, "picky", {"word": "now"})
        assert picky.status == "invalid" and "say please" in picky.content
        broken = await call(host, "broken", {})
        assert broken.status == "error" and "database on fire" in broken.content
    assert host.get_tool("picky").error_rate == 0.0
    assert host.get_tool("broken").error_rate == 1.0 and host.get_tool("broken").demoted
    assert host.server_states()["legacy"]["state"] == "up"


async def test_crash_counts_against_health(stdio_host: ToolHost):
    before = stdio_host.get_tool("crash").samples
    result = await call(stdio_host, "crash", {})
    assert result.is_error
    info = stdio_host.get_tool("crash")
    assert info.samples == before + 1 and info.error_rate > 0
    assert await stdio_host.wait_for_server("mis", 20)


async def test_idempotent_read_only_third_party_tool_is_cached_when_configured(
    make_host: Callable[..., ToolHost], everything_command: list[str]
):
    cached = {"get-resource-reference": 60.0, "gzip-file-as-resource": 60.0}
    host = make_host(
        stdio("ev-cache", everything_command, cacheable_seconds=cached),
        stdio("ev-plain", everything_command),
    )
    await host.start()
    info = host.get_tool("get-resource-reference")
    assert info.latency.idempotent and info.latency.read_only  # from the tool's annotations
    assert info.latency.cacheable_seconds == 60.0
    args = {"resourceType": "Text", "resourceId": 3}
    first = await call(host, "get-resource-reference", args)
    second = await call(host, "get-resource-reference", args)
    assert (first.cached, second.cached) == (False, True) and second.content == first.content
    # Idempotent but not read-only (it writes a resource): configured or not, never cached.
    assert host.get_tool("gzip-file-as-resource").latency.cacheable_seconds == 0.0
    # The same tool on a server without the setting: never cached.
    plain = "ev-plain_get-resource-reference"
    assert host.get_tool(plain).latency.cacheable_seconds == 0.0
    assert not (await call(host, plain, args)).cached and not (await call(host, plain, args)).cached


def test_tools_list_shows_needs_tasks(tmp_path: Path, legacy_command: list[str], capsys):
    import yaml

    from bot.cli import main

    config = {
        "tools": {"calibration_path": str(tmp_path / "cal.json"), "sandbox_dir": str(tmp_path)},
        "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"},
        "mcp": {"servers": [{"name": "legacy", "transport": "stdio", "command": legacy_command}]},
    }
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["-c", str(path), "tools", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["background"].split()[-2:] == ["needs", "tasks"]
    assert rows["echo"].split()[-1] == "up"
