"""The host against a real MCP server over stdio (mcp SDK on both ends)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest

from campaigns.basics import Tier
from tools.config import McpServerConfig
from tools.host import ServerState, ToolHost

ALL = ["*"]
ConfigFactory = Callable[..., McpServerConfig]


async def test_discovery_reads_meta_and_names(stdio_host: ToolHost):
    fast = stdio_host.get_tool("fast")
    assert fast is not None and fast.server == "mis" and fast.kind == "mcp"
    assert fast.latency.estimated_duration_ms == 5 and fast.latency.max_duration_ms == 200
    assert fast.latency.idempotent and fast.latency.cacheable_seconds == 60
    assert fast.tier is Tier.FAST and fast.timeout_ms == 200 and fast.healthy
    legacy = stdio_host.get_tool("legacy")
    assert legacy.tier is Tier.DEEP and legacy.latency.estimated_duration_ms is None
    # Not provider-safe -> sanitised; collides with built-in dice/roll -> server-prefixed.
    assert stdio_host.get_tool("weird_name_with_spaces").original_name == "weird.name/with spaces"
    remote_roll = stdio_host.get_tool("mis_roll")
    assert remote_roll.original_name == "roll" and stdio_host.get_tool("roll").server == "dice"
    assert [c.renamed for c in stdio_host.collisions] == ["mis_roll"]
    result = await stdio_host.call(
        "mis_roll", {"dice": "d8"}, whitelist=ALL, tier=Tier.FAST, npc="n"
    )
    assert result.structured == {"result": "remote d8"}


async def test_call_prefers_structured_content(stdio_host: ToolHost):
    result = await stdio_host.call(
        "fast", {"x": 21}, whitelist=["fast"], tier=Tier.FAST, npc="Bartok", call_id="a"
    )
    assert (result.status, result.structured) == ("ok", {"x": 21, "double": 42})
    assert result.content == '{"x": 21, "double": 42}'


async def test_schema_invalid_arguments_never_reach_the_server(stdio_host: ToolHost):
    before = (await stdio_host.call("count", {}, whitelist=ALL, tier=Tier.FAST, npc="n")).structured
    bad = await stdio_host.call("flaky", {"fail": "yes"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert bad.status == "invalid" and "boolean" in bad.content
    missing = await stdio_host.call("flaky", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert missing.status == "invalid" and "'fail' is a required property" in missing.content
    after = (await stdio_host.call("count", {}, whitelist=ALL, tier=Tier.FAST, npc="n")).structured
    assert after == before  # count is not cached (cacheable_seconds 0) and nothing else ran


async def test_idempotent_mcp_results_are_cached(stdio_host: ToolHost):
    first = await stdio_host.call("fast", {"x": 99}, whitelist=ALL, tier=Tier.FAST, npc="n")
    count = (await stdio_host.call("count", {}, whitelist=ALL, tier=Tier.FAST, npc="n")).structured
    second = await stdio_host.call("fast", {"x": 99}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert second.cached and second.content == first.content
    again = (await stdio_host.call("count", {}, whitelist=ALL, tier=Tier.FAST, npc="n")).structured
    assert again == count  # the server did not see the second call


async def test_tool_error_result(stdio_host: ToolHost):
    result = await stdio_host.call("flaky", {"fail": True}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert (result.status, result.is_error) == ("error", True)
    assert "flaky failed as requested" in result.content


async def test_mcp_timeout_cuts_within_50ms(stdio_host: ToolHost):
    started = time.perf_counter()
    result = await stdio_host.call("slow", {"ms": 3000}, whitelist=ALL, tier=Tier.FAST, npc="n")
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert result.status == "timeout"
    assert 300 <= elapsed_ms < 350
    # The connection survives a timed-out call.
    ok = await stdio_host.call("slow", {"ms": 1}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert ok.status == "ok"


async def test_huge_output_truncated(stdio_host: ToolHost):
    result = await stdio_host.call("huge", {"n": 50_000}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert result.status == "ok" and result.structured is None
    assert result.content.endswith("[truncated 42014 chars]")  # 12 + 50000 + 2 - 8000


async def test_parallel_mcp_calls(stdio_host: ToolHost):
    from tools.host import ToolCall

    calls = [ToolCall(str(i), "slow", {"ms": 150}) for i in range(4)]
    started = time.perf_counter()
    report = await stdio_host.call_many(calls, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert all(r.status == "ok" for r in report.results)
    assert (time.perf_counter() - started) * 1000 < 450


async def test_crash_mid_call_restart_next_call_succeeds(
    make_host: Callable[..., ToolHost],
    new_stdio_config: ConfigFactory,
    caplog: pytest.LogCaptureFixture,
):
    host = make_host(new_stdio_config("crashy"))
    with caplog.at_level(logging.INFO, logger="glyphoxa.mcp.crashy"):
        await host.start()
        assert await host.wait_for_server("crashy", 20)
        result = await host.call("crash", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert (result.status, result.is_error) == ("error", True)
        assert not host.get_tool("fast").healthy  # hidden while down
        assert "fast" not in [t.name for t in host.visible_tools(ALL, Tier.DEEP)]
        down = await host.call("fast", {"x": 1}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert down.status == "error" and "unavailable" in down.content
        assert await host.wait_for_server("crashy", 20)
    assert host.server_states()["crashy"]["restarts"] == 1
    assert "fast" in [t.name for t in host.visible_tools(ALL, Tier.DEEP)]
    result = await host.call("fast", {"x": 2}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert result.status == "ok" and result.structured == {"x": 2, "double": 4}
    # The server's stderr reached our log, including its last words.
    lines = [r.getMessage() for r in caplog.records if r.name == "glyphoxa.mcp.crashy"]
    assert "crash tool: exiting now" in lines and "misbehaving server starting" in lines


async def test_list_changed_makes_new_tool_visible(
    make_host: Callable[..., ToolHost], new_stdio_config: ConfigFactory
):
    host = make_host(new_stdio_config("grow"))
    await host.start()
    assert host.get_tool("late") is None
    result = await host.call("add_tool", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert result.status == "ok"
    assert await host.wait_for(lambda h: h.get_tool("late") is not None, 5)
    assert "late" in [t.name for t in host.visible_tools(["late"], Tier.FAST)]
    late = await host.call("late", {"word": "hi"}, whitelist=["late"], tier=Tier.FAST, npc="n")
    assert late.structured == {"result": "HI"}


async def test_expose_as_override_and_down_server_never_blocks(
    make_host: Callable[..., ToolHost], new_stdio_config: ConfigFactory
):
    broken = McpServerConfig(
        name="broken", transport="stdio", command=["/nonexistent/mcp-server"], connect_timeout_s=2
    )
    host = make_host(new_stdio_config("ren", expose_as={"fast": "quick", "roll": "fast"}), broken)
    await host.start()
    assert host.server_states()["broken"]["state"] in {"down", "connecting", "failed"}
    assert "FileNotFoundError" in (host.server_states()["broken"]["last_error"] or "")
    assert host.get_tool("quick").original_name == "fast"
    assert host.get_tool("fast").original_name == "roll"  # explicit names may reuse a free name
    ok = await host.call("quick", {"x": 3}, whitelist=["quick"], tier=Tier.FAST, npc="n")
    assert ok.structured == {"x": 3, "double": 6}


async def test_restarts_stop_at_the_limit(make_host: Callable[..., ToolHost]):
    from tools.host import RestartPolicy

    broken = McpServerConfig(name="gone", transport="stdio", command=["/nonexistent/mcp-server"])
    policy = RestartPolicy(initial_backoff_s=0.01, max_backoff_s=0.02, max_restarts=3)
    host = make_host(broken, restart_policy=policy)
    await host.start()
    assert await host.wait_for(lambda h: h.server_states()["gone"]["state"] == "failed", 5)
    assert ServerState.FAILED.value == "failed"


async def test_stderr_is_rate_limited(
    make_host: Callable[..., ToolHost],
    new_stdio_config: ConfigFactory,
    caplog: pytest.LogCaptureFixture,
):
    host = make_host(new_stdio_config("noisy"))
    with caplog.at_level(logging.INFO, logger="glyphoxa.mcp.noisy"):
        await host.start()
        result = await host.call("spam", {"lines": 200}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert result.status == "ok"
        await host.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "glyphoxa.mcp.noisy"]
    shown = [m for m in messages if "suppressed" not in m]
    # the burst allowance of one 10 s window, then the last 5 held-back lines as it exits
    assert len(shown) == 20 + 5, shown
    summary = [m for m in messages if "suppressed" in m]
    assert len(summary) == 1 and "spam line 100" not in shown
    assert shown[-5:] == [f"spam line {i}" for i in range(195, 200)]
    assert messages.index(summary[0]) == len(messages) - 6  # the count, then the last words


async def test_probe_at_connect_only_touches_safe_tools(
    make_host: Callable[..., ToolHost], new_stdio_config: ConfigFactory
):
    host = make_host(new_stdio_config("probed", probe=True))
    await host.start()
    assert await host.wait_for(lambda h: h.get_tool("count") is not None, 10)
    assert await host.wait_for(lambda h: h.get_tool("count").samples == 5, 10)
    # count is idempotent and takes no arguments; nothing with side effects was called.
    assert host.get_tool("crash").healthy and host.get_tool("add_tool").samples == 0
    assert host.get_tool("late") is None
    calls = await host.call("count", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert calls.structured == {"result": 0}  # probes of count itself do not count calls


async def test_caller_cancellation_of_an_mcp_call_propagates(stdio_host: ToolHost):
    task = asyncio.ensure_future(
        stdio_host.call("slow", {"ms": 250}, whitelist=ALL, tier=Tier.FAST, npc="n")
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await stdio_host.call("slow", {"ms": 1}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert after.status == "ok"
