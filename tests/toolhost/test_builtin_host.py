"""The host with in-process tools only: visibility, permissions, validation, execution."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from campaigns.basics import Tier
from tools.host import ToolCall, ToolHost, safe_name
from tools.host.calibration import DEMOTE_ERROR_RATE, MIN_SAMPLES
from tools.host.types import Invocation
from tools.spec import BuiltinServer

ALL = ["*"]
Builtins = Callable[[], list[BuiltinServer]]


def names(tools: list) -> list[str]:
    return [t.name for t in tools]


async def test_visible_tools_intersect_whitelist_and_tier_fastest_first(builtin_host: ToolHost):
    wanted = ["echo", "roll", "consult", "think"]
    fast = names(builtin_host.visible_tools(wanted, Tier.FAST))
    assert fast == ["roll", "echo"]  # 1 ms before 2 ms; consult/think are slower tiers
    standard = names(builtin_host.visible_tools(wanted, Tier.STANDARD))
    assert standard == ["roll", "echo", "consult"]
    deep = names(builtin_host.visible_tools(wanted, Tier.DEEP))
    assert deep == ["roll", "echo", "consult", "think"]  # undeclared counts as DEEP
    assert builtin_host.visible_tools([], Tier.DEEP) == []
    everything = names(builtin_host.visible_tools(ALL, Tier.DEEP))
    assert set(everything) == {t.name for t in builtin_host.list_tools()}


async def test_openai_tools_format(builtin_host: ToolHost):
    tools = builtin_host.openai_tools(["echo"], Tier.FAST)
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Echo text.",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
            },
        }
    ]


async def test_call_ok_structured_and_text(builtin_host: ToolHost):
    result = await builtin_host.call(
        "roll", {"dice": "2d6"}, whitelist=["roll"], tier=Tier.FAST, npc="Bartok", call_id="c1"
    )
    assert (result.status, result.is_error, result.call_id) == ("ok", False, "c1")
    assert result.structured == {"dice": "2d6", "total": 7}
    assert json.loads(result.content) == result.structured
    text = await builtin_host.call("consult", "{}", whitelist=ALL, tier=Tier.DEEP, npc="x")
    for empty in ("", "null", "  "):
        same = await builtin_host.call("consult", empty, whitelist=ALL, tier=Tier.DEEP, npc="x")
        assert same.status == "ok"
    listed = await builtin_host.call("consult", "[1]", whitelist=ALL, tier=Tier.DEEP, npc="x")
    assert listed.status == "invalid" and "JSON object" in listed.content
    assert (text.content, text.structured) == ("deep thought", None)


async def test_whitelist_bypass_is_refused_and_logged(
    builtin_host: ToolHost, caplog: pytest.LogCaptureFixture
):
    with caplog.at_level(logging.WARNING, logger="glyphoxa.security"):
        result = await builtin_host.call(
            "roll", {"dice": "1d4"}, whitelist=["echo"], tier=Tier.DEEP, npc="Bartok"
        )
    assert (result.status, result.is_error) == ("refused", True)
    assert "not available" in result.content
    events = [r for r in caplog.records if r.name == "glyphoxa.security"]
    assert len(events) == 1 and "Bartok" in events[0].getMessage()
    assert "whitelist" in events[0].getMessage()
    unknown = await builtin_host.call("nope", {}, whitelist=ALL, tier=Tier.DEEP, npc="Bartok")
    assert unknown.status == "refused"


async def test_over_tier_call_is_refused(builtin_host: ToolHost, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="glyphoxa.security"):
        result = await builtin_host.call("consult", {}, whitelist=ALL, tier=Tier.FAST, npc="Bartok")
    assert result.status == "refused"
    assert any("budget" in r.getMessage() for r in caplog.records if r.name == "glyphoxa.security")


async def test_schema_invalid_arguments_are_refused_before_dispatch(builtin_host: ToolHost):
    calls_before = (
        await builtin_host.call("echo", {"text": "a"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    ).structured["calls"]
    bad = await builtin_host.call("echo", {"text": 5}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert (bad.status, bad.is_error) == ("invalid", True)
    assert "not of type 'string'" in bad.content
    extra = await builtin_host.call(
        "echo", {"text": "a", "x": 1}, whitelist=ALL, tier=Tier.FAST, npc="n"
    )
    assert extra.status == "invalid"
    broken = await builtin_host.call("echo", "{not json", whitelist=ALL, tier=Tier.FAST, npc="n")
    assert broken.status == "invalid" and "not valid JSON" in broken.content
    negative = await builtin_host.call("sleepy", {"ms": -1}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert negative.status == "invalid" and "ms" in negative.content
    after = await builtin_host.call("echo", {"text": "b"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert after.structured["calls"] == calls_before + 1  # no invalid call reached the handler


async def test_errors_and_crashes_become_results(builtin_host: ToolHost):
    crash = await builtin_host.call("boom", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert (crash.status, crash.is_error) == ("error", True)
    assert "RuntimeError: kaboom" in crash.content
    expected = await builtin_host.call("oops", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert expected.content == "no table named 'loot'; available: treasure"


async def test_timeout_cuts_within_50ms_of_the_limit(builtin_host: ToolHost):
    started = time.perf_counter()
    result = await builtin_host.call("sleepy", {"ms": 2000}, whitelist=ALL, tier=Tier.FAST, npc="n")
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert result.status == "timeout" and "200 ms" in result.content
    assert 200 <= elapsed_ms < 250


async def test_caller_cancellation_propagates(builtin_host: ToolHost):
    task = asyncio.ensure_future(
        builtin_host.call("sleepy", {"ms": 150}, whitelist=ALL, tier=Tier.FAST, npc="n")
    )
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_huge_output_is_capped_with_visible_marker(tmp_path: Path, new_builtins: Builtins):
    async with ToolHost(builtins=new_builtins(), max_result_chars=100) as host:
        result = await host.call("big", {"n": 1000}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert result.content == "y" * 100 + "\n[truncated 900 chars]"


async def test_idempotent_results_are_cached(builtin_host: ToolHost):
    first = await builtin_host.call(
        "echo", {"text": "cache"}, whitelist=ALL, tier=Tier.FAST, npc="n"
    )
    second = await builtin_host.call(
        "echo", {"text": "cache"}, whitelist=ALL, tier=Tier.FAST, npc="n", call_id="again"
    )
    assert second.cached and not first.cached
    assert second.structured == first.structured and second.call_id == "again"
    other = await builtin_host.call(
        "echo", {"text": "other"}, whitelist=ALL, tier=Tier.FAST, npc="n"
    )
    assert not other.cached


async def test_call_many_runs_in_parallel_and_costs_the_max(builtin_host: ToolHost):
    # Timeouts of 5 s: a shared CI machine may stall the loop for a while, and what this test
    # is about is order, overlap and cost, not the limits (the timeout test covers those).
    calls = [ToolCall(str(i), "nap", {"ms": 300}) for i in range(3)]
    calls.append(ToolCall("quick", "nap", '{"ms": 0}'))
    started = time.perf_counter()
    report = await builtin_host.call_many(calls, whitelist=ALL, tier=Tier.FAST, npc="n")
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert [r.call_id for r in report.results] == ["0", "1", "2", "quick"]
    assert [r.status for r in report.results] == ["ok"] * 4
    assert elapsed_ms < 900  # three 300 ms calls in parallel, not 900 ms in a row
    assert report.cost_ms == max(r.duration_ms for r in report.results)


async def test_metrics_and_async_invocation_log(new_builtins: Builtins):
    seen: list[Invocation] = []

    async def log_call(invocation: Invocation) -> None:
        await asyncio.sleep(0)
        seen.append(invocation)

    async with ToolHost(builtins=new_builtins(), on_invocation=log_call) as host:
        await host.call("roll", {"dice": "1d6"}, whitelist=ALL, tier=Tier.FAST, npc="Bartok")
        await host.call("boom", {}, whitelist=ALL, tier=Tier.FAST, npc="Bartok")
        await host.call("roll", {"dice": "1d6"}, whitelist=[], tier=Tier.FAST, npc="Bartok")
        assert host.metrics.count("roll", "ok") == 1
        assert host.metrics.count("boom", "error") == 1
        assert host.metrics.count("roll", "refused") == 1
    assert [(i.npc, i.tool, i.status) for i in seen] == [
        ("Bartok", "roll", "ok"),
        ("Bartok", "boom", "error"),
        ("Bartok", "roll", "refused"),
    ]
    assert seen[0].server == "dice" and seen[0].tier is Tier.FAST


async def test_measured_p50_overrides_declared_tier(builtin_host: ToolHost):
    assert builtin_host.get_tool("sleepy").tier is Tier.FAST
    stats = builtin_host.get_tool("sleepy").stats
    for _ in range(MIN_SAMPLES):
        stats.record(900.0, True)  # as if it had been measured at 900 ms
    await builtin_host.call("sleepy", {"ms": 0}, whitelist=ALL, tier=Tier.FAST, npc="n")
    info = builtin_host.get_tool("sleepy")
    assert info.tier is Tier.STANDARD and info.measured_p50_ms == 900.0
    assert "sleepy" not in names(builtin_host.visible_tools(ALL, Tier.FAST))
    assert "sleepy" in names(builtin_host.visible_tools(ALL, Tier.STANDARD))


async def test_error_rate_demotes_one_tier_until_recovery(tmp_path: Path, new_builtins: Builtins):
    path = tmp_path / "cal.json"
    async with ToolHost(builtins=new_builtins(), calibration_path=path) as host:
        for _ in range(4):
            await host.call("boom", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
        for _ in range(6):
            host.get_tool("boom").stats.record(1.0, True)  # six good calls, measured earlier
        # The tier is recomputed on the tool's next call: 5 errors in 11 calls.
        await host.call("boom", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
        info = host.get_tool("boom")
        assert info.error_rate == pytest.approx(5 / 11) and info.error_rate > DEMOTE_ERROR_RATE
        assert info.demoted and info.tier is Tier.STANDARD
        assert "boom" not in names(host.visible_tools(ALL, Tier.FAST))
        assert "boom" in names(host.visible_tools(ALL, Tier.STANDARD))
    # A new host in the same environment remembers the window, demotion included.
    async with ToolHost(builtins=new_builtins(), calibration_path=path) as again:
        info = again.get_tool("boom")
        assert info.samples == 11 and info.demoted and info.tier is Tier.STANDARD
        for _ in range(30):
            info.stats.record(1.0, True)
    async with ToolHost(builtins=new_builtins(), calibration_path=path) as third:
        assert not third.get_tool("boom").demoted  # recovered: 5 errors in 41 calls


async def test_expected_tool_errors_never_demote(builtin_host: ToolHost):
    """Bad input politely refused by the tool (ToolError) is the tool working, not failing."""
    for _ in range(2 * MIN_SAMPLES):
        result = await builtin_host.call("oops", {}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert result.is_error and "no table named 'loot'" in result.content
    info = builtin_host.get_tool("oops")
    assert info.samples >= 2 * MIN_SAMPLES and info.error_rate == 0.0
    assert not info.demoted and info.tier is Tier.FAST


async def test_calibration_is_kept_per_environment(tmp_path: Path, new_builtins: Builtins):
    path = tmp_path / "cal.json"
    async with ToolHost(builtins=new_builtins(), calibration_path=path, environment="laptop") as h:
        await h.call("roll", {"dice": "1d4"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    async with ToolHost(builtins=new_builtins(), calibration_path=path, environment="server") as h:
        assert h.get_tool("roll").samples == 0
        await h.call("roll", {"dice": "1d4"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    data = json.loads(path.read_text())
    assert set(data["environments"]) == {"laptop", "server"}
    assert len(data["environments"]["laptop"]["dice/roll"]) == 1


async def test_damaged_calibration_file_starts_fresh(tmp_path: Path, new_builtins: Builtins):
    path = tmp_path / "cal.json"
    path.write_text("{not json")
    async with ToolHost(builtins=new_builtins(), calibration_path=path) as host:
        assert host.get_tool("roll").samples == 0


def test_safe_names():
    assert safe_name("weird.name/with spaces") == "weird_name_with_spaces"
    long_a, long_b = "a" * 70 + "x", "a" * 70 + "y"
    assert len(safe_name(long_a)) == 64 and safe_name(long_a) != safe_name(long_b)
    assert safe_name("ok-name_1") == "ok-name_1"


async def test_invocations_and_calibration_persist_in_the_memory_store(
    tmp_path: Path, new_builtins: Builtins
):
    from campaigns.memory import MemoryStore
    from tools.host.persistence import (
        load_calibration_from_store,
        save_calibration_to_store,
        store_invocation_logger,
    )

    store = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    try:
        session = await store.start_session("example", "tools")
        logger = store_invocation_logger(store, session_id=lambda: session)
        async with ToolHost(builtins=new_builtins(), on_invocation=logger) as host:
            await host.call("roll", {"dice": "1d6"}, whitelist=ALL, tier=Tier.FAST, npc="Bartok")
            await host.call("boom", {}, whitelist=["roll"], tier=Tier.FAST, npc="Whisper")
            assert await save_calibration_to_store(host, store) == 1
        calls = await store.tool_calls()
        assert [(c["npc"], c["tool"], c["status"]) for c in calls] == [
            ("Whisper", "boom", "refused"),
            ("Bartok", "roll", "ok"),
        ]
        async with ToolHost(builtins=new_builtins()) as fresh:
            assert fresh.get_tool("roll").samples == 0
            assert await load_calibration_from_store(fresh, store) == 1
            assert fresh.get_tool("roll").samples == 1
    finally:
        await store.close()


async def test_calibration_autosaves_while_running(tmp_path: Path, new_builtins: Builtins):
    path = tmp_path / "cal.json"
    host = ToolHost(builtins=new_builtins(), calibration_path=path, autosave_s=0.02)
    async with host:
        assert not path.exists()
        await host.call("roll", {"dice": "1d6"}, whitelist=ALL, tier=Tier.FAST, npc="n")
        async with asyncio.timeout(5):
            while not path.exists():  # noqa: ASYNC110 - a file appearing has no event to await
                await asyncio.sleep(0.01)
        saved = json.loads(path.read_text())["environments"][host.calibration.environment]
        assert len(saved["dice/roll"]) == 1
