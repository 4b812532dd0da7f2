"""Fixtures of the tool host tests: small in-process servers and a real stdio MCP server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tools.config import McpConfig, McpServerConfig
from tools.host import RestartPolicy, ToolHost
from tools.spec import BuiltinServer, LatencyMeta, ToolDef, ToolError

STDIO_SERVER = Path(__file__).parent / "servers" / "stdio_server.py"
FAST_RESTART = RestartPolicy(initial_backoff_s=0.05, max_backoff_s=0.5, max_restarts=5)


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def make_builtins() -> list[BuiltinServer]:
    """Two small in-process servers covering every outcome a handler can have."""
    calls: dict[str, int] = {"echo": 0}

    async def echo(text: str) -> dict[str, Any]:
        calls["echo"] += 1
        return {"text": text, "calls": calls["echo"]}

    async def sleepy(ms: int) -> str:
        await asyncio.sleep(ms / 1000)
        return f"slept {ms}"

    async def boom() -> str:
        raise RuntimeError("kaboom")

    async def oops() -> str:
        raise ToolError("no table named 'loot'; available: treasure")

    async def big(n: int) -> str:
        return "y" * n

    async def roll(dice: str) -> dict[str, Any]:
        return {"dice": dice, "total": 7}

    async def think() -> str:
        return "deep thought"

    local = BuiltinServer(
        "local",
        [
            ToolDef(
                "echo",
                "Echo text.",
                _object(text={"type": "string"}),
                echo,
                LatencyMeta(2, 100, idempotent=True, cacheable_seconds=30),
            ),
            ToolDef(
                "sleepy",
                "Sleep.",
                _object(ms={"type": "integer", "minimum": 0}),
                sleepy,
                LatencyMeta(50, 200),
            ),
            ToolDef(
                "nap",
                "Sleep, with room to spare on a busy machine.",
                _object(ms={"type": "integer", "minimum": 0}),
                sleepy,
                LatencyMeta(50, 5000),
            ),
            ToolDef("boom", "Crash.", _object(), boom, LatencyMeta(1, 100)),
            ToolDef("oops", "Expected failure.", _object(), oops, LatencyMeta(1, 100)),
            ToolDef(
                "big", "Long output.", _object(n={"type": "integer"}), big, LatencyMeta(1, 100)
            ),
            ToolDef("think", "Undeclared latency.", _object(), think),
            ToolDef("consult", "A STANDARD tool.", _object(), think, LatencyMeta(900, 2000)),
        ],
    )
    dice = BuiltinServer(
        "dice",
        [
            ToolDef(
                "roll",
                "Roll dice.",
                _object(dice={"type": "string"}),
                roll,
                LatencyMeta(1, 50, read_only=True),
            )
        ],
    )
    return [dice, local]


def stdio_config(name: str = "mis", **extra: Any) -> McpServerConfig:
    return McpServerConfig(
        name=name,
        transport="stdio",
        command=[sys.executable, str(STDIO_SERVER)],
        connect_timeout_s=20,
        **extra,
    )


@pytest.fixture
def new_builtins() -> Callable[[], list[BuiltinServer]]:
    """Factory of fresh in-process servers (tests import no helper modules)."""
    return make_builtins


@pytest.fixture
def new_stdio_config() -> Callable[..., McpServerConfig]:
    return stdio_config


@pytest.fixture
async def builtin_host(tmp_path: Path) -> AsyncIterator[ToolHost]:
    async with ToolHost(builtins=make_builtins(), calibration_path=tmp_path / "cal.json") as host:
        yield host


@pytest.fixture
async def make_host(tmp_path: Path) -> AsyncIterator[Callable[..., ToolHost]]:
    """Build hosts that are closed at the end of the test."""
    hosts: list[ToolHost] = []

    def build(*servers: McpServerConfig, **kwargs: Any) -> ToolHost:
        kwargs.setdefault("restart_policy", FAST_RESTART)
        kwargs.setdefault("calibration_path", tmp_path / "cal.json")
        host = ToolHost(McpConfig(servers=list(servers)), **kwargs)
        hosts.append(host)
        return host

    yield build
    for host in hosts:
        await host.close()


@pytest.fixture(scope="module")
async def stdio_host(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ToolHost]:
    """One host with the real stdio server and the in-process built-ins, shared by a module."""
    path = tmp_path_factory.mktemp("cal") / "cal.json"
    host = ToolHost(
        McpConfig(servers=[stdio_config()]),
        builtins=make_builtins(),
        calibration_path=path,
        restart_policy=FAST_RESTART,
    )
    async with host:
        assert await host.wait_for_server("mis", 20)
        yield host


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    """The reference "everything" MCP server from npm (installed on first use)."""
    from tests.toolhost.third_party import everything_command

    return everything_command()


def everything_config(command: list[str], name: str = "ev", **extra: Any) -> McpServerConfig:
    extra.setdefault("call_timeout_s", 10)
    return McpServerConfig(
        name=name, transport="stdio", command=command, connect_timeout_s=30, **extra
    )


@pytest.fixture(scope="module")
async def everything_host(
    everything_command: list[str], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ToolHost]:
    """A host with the everything server, once its conditional tools arrived (list_changed)."""
    path = tmp_path_factory.mktemp("ev") / "cal.json"
    host = ToolHost(
        McpConfig(servers=[everything_config(everything_command)]),
        calibration_path=path,
        restart_policy=FAST_RESTART,
    )
    async with host:
        assert await host.wait_for(lambda h: h.get_tool("simulate-research-query") is not None, 30)
        yield host


@pytest.fixture(scope="session")
def legacy_command(everything_command: list[str]) -> list[str]:
    """Our handshake-era test server on the TypeScript SDK (``servers/legacy_server.mjs``)."""
    from tests.toolhost.third_party import legacy_server_command

    return legacy_server_command()
