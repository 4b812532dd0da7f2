"""Every documented ``tools:`` form, from an NPC file to the tools the LLM is offered.

A campaign in a temporary folder uses each form (``<server>.*`` for a built-in and for the
third-party "everything" MCP server over real stdio, a bare built-in name, ``<server>__<tool>``
for both kinds, an ``expose_as`` name); ``glyphoxa check`` passes it, then the real table
(``open_table``: tool host, built-in servers, the cascaded engine) answers one turn per NPC
per tier against the scripted OpenAI-compatible LLM server, whose recorded requests are the
tool lists the LLM received. The host refuses a call outside the NPC's list.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.audio.speech import OpenAiStt
from bot.bench.doubles.instant_llm import InstantLlm
from bot.frontends.checking import run_check
from bot.settings.loader import load_config
from bot.table.assembly.table import open_table
from bot.telemetry.metrics import Metrics
from campaigns.basics import Tier
from npcs.engines.events import TurnRequest
from tools.catalog import ToolCatalog

#: The everything server's tools (pinned version), as the LLM sees them.
EVERYTHING = {
    "add_numbers",  # get-sum, renamed by expose_as
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-tiny-image",
    "gzip-file-as-resource",
    "simulate-research-query",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}

# NPC -> (budget, tools:, {tier: the exact tools offered at that tier}).
# The everything server declares no latency, so its tools are DEEP until measured.
CAST: dict[str, tuple[str, list[str], dict[Tier, set[str]]]] = {
    "Bartok": (
        "fast",
        ["dice.*"],
        {tier: {"roll", "roll_table"} for tier in Tier},
    ),
    "Greymantle": (
        "deep",
        ["search_rules", "memory.*"],
        {
            Tier.FAST: {"query_entities", "propose_memory"},
            Tier.STANDARD: {
                "query_entities",
                "propose_memory",
                "search_rules",
                "get_summary",
                "search_sessions",
                "search_facts",
            },
            Tier.DEEP: {
                "query_entities",
                "propose_memory",
                "search_rules",
                "get_summary",
                "search_sessions",
                "search_facts",
            },
        },
    ),
    "Vessa": ("deep", ["ev.*"], {Tier.FAST: set(), Tier.STANDARD: set(), Tier.DEEP: EVERYTHING}),
    "Whisper": (
        "deep",
        ["ev__echo", "add_numbers", "dice__roll_table"],
        {
            Tier.FAST: {"roll_table"},
            Tier.STANDARD: {"roll_table"},
            Tier.DEEP: {"roll_table", "echo", "add_numbers"},
        },
    ),
}


def _write_campaign(folder: Path) -> Path:
    (folder / "npcs").mkdir(parents=True)
    (folder / "campaign.yaml").write_text("name: Forms\nsystem: dnd5e\n")
    for name, (budget, tools, _) in CAST.items():
        text = (
            f"name: {name}\n"
            "personality: Someone who answers.\n"
            f"budget_tier: {budget}\n"
            f"tools: [{', '.join(tools)}]\n"
        )
        (folder / "npcs" / f"{name.lower()}.yaml").write_text(text)
    return folder


def _write_config(tmp_path: Path, llm: InstantLlm, campaign: Path, command: list[str]) -> Path:
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "providers": {
                    "llm": {
                        "name": "openai",
                        "base_url": llm.base_url,
                        "model": "scripted",
                        "api_key": "scripted",
                    }
                },
                "campaign": {"path": str(campaign), "hot_reload": False},
                "tools": {
                    "sandbox_dir": str(tmp_path / "files"),
                    "calibration_path": str(tmp_path / "calibration.json"),
                },
                "mcp": {
                    "servers": [
                        {
                            "name": "ev",
                            "transport": "stdio",
                            "command": command,
                            "connect_timeout_s": 30,
                            "call_timeout_s": 10,
                            "expose_as": {"get-sum": "add_numbers"},
                        }
                    ]
                },
            }
        )
    )
    return config


def _first_requests(requests: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The first request of each turn (later rounds carry tool results)."""
    for request in requests:
        if not any(m["role"] in ("assistant", "tool") for m in request["messages"][1:]):
            yield request


async def test_every_tool_form_reaches_the_llm_as_written(
    tmp_path: Path, everything_command: list[str]
) -> None:
    async with InstantLlm() as llm:
        campaign = _write_campaign(tmp_path / "forms")
        config_path = _write_config(tmp_path, llm, campaign, everything_command)
        report = run_check(campaign, config_path=config_path)
        assert report.ok and not report.warnings, [str(i) for i in report.issues + report.warnings]

        config = load_config(config_path)
        async with open_table(
            config,
            memory_url=f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}",
            stt=OpenAiStt(base_url="http://127.0.0.1:9/v1", api_key="unused"),
            metrics=Metrics(),
            serve_metrics=False,
        ) as session:
            host = session.tools
            assert await host.wait_for(
                lambda h: h.get_tool("simulate-research-query") is not None, 30
            )
            # Only the built-in servers some tools: entry grants were started.
            assert set(host.server_states()) == {"dice", "rules", "memory", "ev"}
            offered: dict[tuple[str, Tier], list[str]] = {}
            for name, (_, _, expected) in CAST.items():
                npc = session.campaign.npcs[name]
                engine = session.engine_for(npc)
                assert engine is not None
                for tier in Tier:
                    effective = min(tier, npc.budget_tier)
                    before = len(llm.requests)
                    request = TurnRequest(npc, "Arin", "Anything new today?", effective)
                    async with aclosing(engine.respond(request)) as events:
                        async for _event in events:
                            pass
                    first = next(_first_requests(llm.requests[before:]))
                    names = [t["function"]["name"] for t in first.get("tools", [])]
                    offered[(name, tier)] = names
                    assert set(names) == expected[tier], (name, tier, names)
                    assert len(names) == len(set(names))
            # Fastest first: Greymantle's FAST tool leads his STANDARD list.
            assert offered[("Greymantle", Tier.STANDARD)][0] == "query_entities"

            # The host re-checks every call against the same reading of the list.
            vessa = session.campaign.npcs["Vessa"]
            refused = await host.call(
                "roll", {"dice": "1d20"}, whitelist=vessa.tools, tier=Tier.DEEP, npc="Vessa"
            )
            assert refused.status == "refused" and "not available to you" in refused.content
            echoed = await host.call(
                "echo", {"message": "hi"}, whitelist=["ev__echo"], tier=Tier.DEEP, npc="Whisper"
            )
            assert echoed.status == "ok" and "hi" in echoed.content
            summed = await host.call(
                "add_numbers", {"a": 2, "b": 3}, whitelist=["add_numbers"], tier=Tier.DEEP,
                npc="Whisper",
            )  # fmt: skip
            assert summed.status == "ok" and "5" in summed.content
            rolled = await host.call(
                "roll", {"expression": "1d20"}, whitelist=["dice.*"], tier=Tier.FAST, npc="Bartok"
            )
            assert rolled.status == "ok", rolled.content
            # The scripted LLM calls roll whenever it is offered: it ran for Bartok (dice.*).
            results = [
                m["content"]
                for r in llm.requests
                if "You are Bartok" in r["messages"][0]["content"]
                for m in r["messages"]
                if m["role"] == "tool"
            ]
            assert results and all('"expression": "1d20"' in t for t in results), results


def test_check_reads_the_forms_as_the_host_does() -> None:
    catalog = ToolCatalog.from_config()
    assert catalog.builtin_servers_for([["dice.*"], ["search_rules"]]) == ["dice", "rules"]
    assert catalog.builtin_servers_for([["*"]]) == list(catalog.servers)
    assert catalog.builtin_servers_for([["dice__roll"]]) == ["dice"]
    assert {t.exposed for t in catalog.granted(["dice.*"])} == {"roll", "roll_table"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("roll_dice", "unknown tool 'roll_dice'; did you mean 'roll'?"),
        ("dice", "unknown tool 'dice'; did you mean 'dice.*'?"),
        ("dise.*", "no tool server named 'dise'; did you mean 'dice.*'?"),
        ("dice__rol", "server 'dice' has no tool 'rol'; did you mean 'dice__roll'?"),
        ("lore__x", "'lore__x' names no configured tool server ('lore')"),
        ("dice.", "unknown tool 'dice.'; did you mean 'dice.*'?"),
        (
            "roll*",
            "'roll*' is not a tool name ('*' works alone (every tool) or as <server>.* only); "
            "did you mean 'roll'?",
        ),
        (" roll", "' roll' is not a tool name (spaces around the tool name); did you mean 'roll'?"),
    ],
)
def test_an_entry_that_grants_nothing_says_what_would(entry: str, message: str) -> None:
    assert ToolCatalog.from_config().resolve(entry).error == message
