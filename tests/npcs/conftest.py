"""Fixtures of the NPC tests: a real ToolHost with small in-process built-in servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from npcs.schema import NpcDefinition
from tools.host import ToolHost
from tools.spec import BuiltinServer, LatencyMeta, ToolDef

_OBJECT = {"type": "object", "properties": {}, "additionalProperties": True}


@dataclass
class ToolLog:
    calls: list[str] = field(default_factory=list)
    gate_a: asyncio.Event = field(default_factory=asyncio.Event)
    gate_b: asyncio.Event = field(default_factory=asyncio.Event)
    archive_started: asyncio.Event = field(default_factory=asyncio.Event)
    archive_release: asyncio.Event = field(default_factory=asyncio.Event)


def make_servers(log: ToolLog) -> list[BuiltinServer]:
    async def roll_die(**_: Any) -> dict[str, Any]:
        log.calls.append("roll_die")
        return {"value": 4}

    async def gate_a(**_: Any) -> str:
        # Succeeds only if gate_b runs at the same time: proves the calls are parallel.
        log.calls.append("gate_a")
        log.gate_a.set()
        await asyncio.wait_for(log.gate_b.wait(), 3)
        return "a open"

    async def gate_b(**_: Any) -> str:
        log.calls.append("gate_b")
        log.gate_b.set()
        await asyncio.wait_for(log.gate_a.wait(), 3)
        return "b open"

    async def consult_archive(topic: str = "", **_: Any) -> str:
        log.calls.append("consult_archive")
        log.archive_started.set()
        await asyncio.wait_for(log.archive_release.wait(), 3)
        return f"The archive says {topic} began in the year 812."

    async def deep_lore(**_: Any) -> str:
        log.calls.append("deep_lore")
        return "ancient lore"

    async def open_vault(**_: Any) -> str:
        log.calls.append("open_vault")
        return "the vault is open"

    fast = LatencyMeta(estimated_duration_ms=20, max_duration_ms=3500)
    fast_read_only = LatencyMeta(estimated_duration_ms=20, max_duration_ms=3500, read_only=True)
    slow = LatencyMeta(estimated_duration_ms=1200, max_duration_ms=3500)
    deep = LatencyMeta(estimated_duration_ms=3000, max_duration_ms=3900)
    topic = {"type": "object", "properties": {"topic": {"type": "string"}}}
    return [
        BuiltinServer(
            "testtools",
            [
                ToolDef("roll_die", "Roll a die.", _OBJECT, roll_die, fast_read_only),
                ToolDef("gate_a", "Open gate A.", _OBJECT, gate_a, fast),
                ToolDef("gate_b", "Open gate B.", _OBJECT, gate_b, fast),
                ToolDef("consult_archive", "Search the archive.", topic, consult_archive, slow),
                ToolDef("open_vault", "Open the vault.", _OBJECT, open_vault, fast),
                ToolDef("deep_lore", "Study ancient lore.", _OBJECT, deep_lore, deep),
            ],
        )
    ]


@pytest.fixture
def tool_log() -> ToolLog:
    return ToolLog()


@pytest.fixture
async def host(tool_log: ToolLog) -> AsyncIterator[ToolHost]:
    async with ToolHost(builtins=make_servers(tool_log)) as running:
        yield running


@pytest.fixture
def sage() -> NpcDefinition:
    return NpcDefinition(
        name="Greymantle",
        aliases=["the sage"],
        personality="An elderly sage who lectures.",
        budget_tier="deep",
        tools=["roll_die", "gate_a", "gate_b", "consult_archive"],
        filler_lines=["Let me consult my notes..."],
        secret_knowledge=["He was in the Black Candle society."],
    )


@pytest.fixture(scope="session")
async def local_llm() -> AsyncIterator[Any]:
    """One real llama.cpp server with SmolLM2 for the whole test session."""
    from npcs.inference.server import LocalLlmServer, llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install llama-cpp-python)")
    async with LocalLlmServer(n_ctx=2048, n_threads=1) as server:
        yield server
