"""``glyphoxa bench tools``: the tool host's hot paths.

- host overhead of an in-process call (permission, validation, timeout, metrics), handler
  excluded: goal p50 <= 100 us;
- ``visible_tools`` over 200 tools: goal p50 <= 50 us (steady state, plus the first call
  after a registry change for reference);
- one stdio MCP call through the host vs. the same call with a bare mcp SDK ``ClientSession``
  against an identical server process, interleaved pairs over several rounds of fresh
  processes: goal median ratio <= 1.10.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bot.bench.result import BenchResult
from campaigns.basics import Tier, percentile
from tools.config import McpConfig, McpServerConfig
from tools.host import ToolHost
from tools.spec import BuiltinServer, LatencyMeta, ToolDef

__all__ = ["run_bench"]

_ECHO_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool(meta={"io.glyphoxa/latency": {"estimated_duration_ms": 2, "max_duration_ms": 2000}})
async def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    server.run("stdio")
'''


async def run_bench(quick: bool) -> list[BenchResult]:
    """Host overheads, then the built-in tools' own hot paths (rules search, dice, file I/O)."""
    from bot.bench import builtin_tools as builtin_bench

    return [
        await _bench_call_overhead(300 if quick else 5000),
        *await _bench_visible_tools(300 if quick else 5000),
        await _bench_stdio_ratio(2 if quick else 6, 40 if quick else 100),
        *await builtin_bench.run_bench(quick=quick),
    ]


async def _bench_call_overhead(iterations: int) -> BenchResult:
    inside = [0.0]

    async def lookup(key: str, limit: int = 3) -> dict[str, Any]:
        started = time.perf_counter()
        value = {"key": key, "limit": limit}
        inside[0] = time.perf_counter() - started
        return value

    schema = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["key"],
        "additionalProperties": False,
    }
    server = BuiltinServer(
        "bench", [ToolDef("lookup", "Look up.", schema, lookup, LatencyMeta(1, 100))]
    )
    whitelist = ["lookup", "roll", "search_rules"]
    overheads: list[float] = []
    async with ToolHost(builtins=[server]) as host:
        for i in range(iterations + 50):
            started = time.perf_counter()
            result = await host.call(
                "lookup",
                {"key": "k", "limit": 2},
                whitelist=whitelist,
                tier=Tier.FAST,
                npc="bench",
                call_id=str(i),
            )
            total = time.perf_counter() - started
            assert result.status == "ok", result.content
            if i >= 50:  # warm-up: validator compile, metric children
                overheads.append((total - inside[0]) * 1e6)
    p50 = percentile(overheads, 50)
    return BenchResult(
        name="in-process tool call host overhead p50",
        value=p50,
        unit="us",
        method=f"{iterations} sequential calls of a 2-argument built-in tool; time of "
        "host.call minus time inside the handler; perf_counter",
        goal="<= 100 us",
        passed=p50 <= 100,
        extra={"p99_us": percentile(overheads, 99)},
    )


async def _bench_visible_tools(iterations: int) -> list[BenchResult]:
    async def noop() -> str:
        return ""

    schema = {"type": "object", "properties": {}}
    tools = [
        ToolDef(
            f"tool_{i:03d}",
            f"Tool {i}.",
            schema,
            noop,
            LatencyMeta(estimated_duration_ms=float(10 + (i * 37) % 3900), max_duration_ms=4000),
        )
        for i in range(200)
    ]
    whitelist = [f"tool_{i:03d}" for i in range(0, 200, 3)]
    tiers = [Tier.FAST, Tier.STANDARD, Tier.DEEP]
    warm: list[float] = []
    cold: list[float] = []
    async with ToolHost(builtins=[BuiltinServer("many", tools)]) as host:
        for i in range(iterations):
            tier = tiers[i % 3]
            started = time.perf_counter()
            host.visible_tools(whitelist, tier)
            warm.append((time.perf_counter() - started) * 1e6)
        for i in range(max(100, iterations // 10)):
            host.registry.clear_views()  # as after a tier change (a connect also re-reads lists)
            started = time.perf_counter()
            host.visible_tools(whitelist, tiers[i % 3])
            cold.append((time.perf_counter() - started) * 1e6)
    p50 = percentile(warm, 50)
    method = "200 registered tools, NPC whitelist of 67, tiers rotating; perf_counter"
    return [
        BenchResult(
            name="visible_tools p50 (200 tools)",
            value=p50,
            unit="us",
            method=f"{iterations} calls, steady state; {method}",
            goal="<= 50 us",
            passed=p50 <= 50,
            extra={"p99_us": percentile(warm, 99)},
        ),
        BenchResult(
            name="visible_tools p50 after a registry change (200 tools)",
            value=percentile(cold, 50),
            unit="us",
            method=f"{len(cold)} calls with the view cache cleared first; {method}",
        ),
    ]


async def _bench_stdio_ratio(rounds: int, iterations: int) -> BenchResult:
    host_ms: list[float] = []
    bare_ms: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "echo_server.py"
        script.write_text(_ECHO_SERVER)
        # Fresh server processes per round: on a shared machine with few cores, which process
        # lands on which core decides more than our code does; several rounds average that out.
        for _ in range(rounds):
            await _stdio_round(script, iterations, host_ms, bare_ms)
    # Each host call is paired with the bare call next to it, so load drift on the shared
    # machine cancels out; the median of those ratios is the figure.
    ratios = [h / b for h, b in zip(host_ms, bare_ms, strict=True)]
    ratio = percentile(ratios, 50)
    return BenchResult(
        name="stdio MCP call via host / bare SDK (median ratio)",
        value=ratio,
        unit="x",
        method=f"{rounds} rounds (fresh processes) x {iterations} interleaved pairs of echo "
        "calls, order alternating, host vs. bare mcp ClientSession (same protocol version) on "
        "identical servers; "
        "median of per-pair ratios; perf_counter",
        goal="<= 1.10",
        passed=ratio <= 1.10,
        extra={
            "host_median_ms": percentile(host_ms, 50),
            "bare_median_ms": percentile(bare_ms, 50),
            "ratio_of_medians": percentile(host_ms, 50) / percentile(bare_ms, 50),
        },
    )


async def _stdio_round(
    script: Path, iterations: int, host_ms: list[float], bare_ms: list[float]
) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    config = McpServerConfig(
        name="bench", transport="stdio", command=[sys.executable, str(script)], connect_timeout_s=30
    )
    params = StdioServerParameters(command=sys.executable, args=[str(script)])
    async with ToolHost(McpConfig(servers=[config])) as host:
        if not await host.wait_for_server("bench", 30):
            raise RuntimeError("bench MCP server did not start")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as bare:
            # The same protocol as the host: the SDK's own default (Client(mode="auto")) probes
            # server/discover first, so both sides speak 2026-07-28 to this server.
            try:
                await bare.discover()
            except MCPError:
                await bare.initialize()
            assert bare.protocol_version == host.servers.get("bench").session_protocol
            for i in range(iterations + 10):
                # Alternate who goes first so neither side gains from the order.
                if i % 2:
                    host_time = await _host_call(host, i)
                    bare_time = await _bare_call(bare, i)
                else:
                    bare_time = await _bare_call(bare, i)
                    host_time = await _host_call(host, i)
                if i >= 10:
                    bare_ms.append(bare_time)
                    host_ms.append(host_time)


async def _bare_call(session: Any, i: int) -> float:
    started = time.perf_counter()
    raw = await session.call_tool("echo", {"text": f"hello {i}"})
    elapsed = (time.perf_counter() - started) * 1000
    assert not raw.is_error
    return elapsed


async def _host_call(host: ToolHost, i: int) -> float:
    started = time.perf_counter()
    result = await host.call(
        "echo", {"text": f"hello {i}"}, whitelist=["*"], tier=Tier.FAST, npc="bench"
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert result.status == "ok", result.content
    return elapsed
