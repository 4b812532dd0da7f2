"""The night's cost through the real table: ``glyphoxa rehearse`` against the local
OpenAI-compatible server priced as a cloud model. Costs add up from the usage fields the server
sends, the soft limit warns once, the hard limit moves every NPC to the fallback model mid-scene
with the DM told, later turns are served by the fallback, and the report shows the cost."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import scripted_llm_on_a_thread
from scripted_config import scripted_config

from bot.bench.doubles.instant_llm import InstantLlm, usage
from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"

pytestmark = pytest.mark.slow

#: US dollars per million tokens: a scripted turn costs a few dollars, so limits read plainly.
INPUT_PRICE, OUTPUT_PRICE = 1000.0, 2000.0


@pytest.fixture
def fallback_llm() -> Iterator[InstantLlm]:
    """A second scripted server on its own loop thread: the "local" fallback model."""
    yield from scripted_llm_on_a_thread()


def _priced(config: Path, fallback: InstantLlm, soft: float, hard: float) -> None:
    data: dict[str, Any] = yaml.safe_load(config.read_text())
    data["pricing"] = {
        "llm": {"scripted": {"input_per_million": INPUT_PRICE, "output_per_million": OUTPUT_PRICE}}
    }
    data["session"] = {
        "spend": {
            "soft": soft,
            "hard": hard,
            "fallback": {"name": "local", "base_url": fallback.base_url, "model": "fallback"},
        }
    }
    config.write_text(yaml.safe_dump(data))


def _cost(requests: list[dict[str, Any]]) -> float:
    """What the server's own usage fields say the streamed requests cost."""
    total = 0.0
    for body in requests:
        if not body.get("stream"):
            continue  # the session summary at the end is not an NPC's turn
        written = len(InstantLlm()._answer(body)) - 2  # the server's count: without role, finish
        used = usage(body, written)
        total += (used["prompt_tokens"] * INPUT_PRICE + written * OUTPUT_PRICE) / 1e6
    return total


def _scene(path: Path) -> Path:
    lines = [
        "Bartok, what's on tap tonight?",
        "Bartok, how much for a room?",
        "Bartok, is the cellar locked?",
    ]
    scene = {
        "title": "a costly night",
        "campaign": str(EXAMPLE),
        "lines": [
            {"at": 0.5 + 6 * i, "speaker": "Arin", "text": text, "expect_npc": "Bartok"}
            for i, text in enumerate(lines)
        ],
        "tail_s": 60,
    }
    path.write_text(yaml.safe_dump(scene))
    return path


def test_spend_limits_warn_then_switch_to_the_fallback(
    tmp_path: Path, llm: InstantLlm, fallback_llm: InstantLlm
) -> None:
    config = scripted_config(tmp_path, llm, speculate=False)
    # Bartok's first turn is two requests (a dice round, then the answer) of ~1,500 prompt
    # tokens (~$0.7 each here): the first passes the soft limit, the second the hard one.
    _priced(config, fallback_llm, soft=0.5, hard=1.2)
    out = tmp_path / "out"
    code = main(["--config", str(config), "rehearse", str(_scene(tmp_path / "scene.yaml")),
                 "--out", str(out), "--playout-speed", "8"])  # fmt: skip
    report = (out / "report.md").read_text()
    assert code == 0, report
    records = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    alerts = [r["message"] for r in records if r["type"] == "alert"]
    soft = [a for a in alerts if "soft limit" in a]
    hard = [a for a in alerts if "session.spend.hard" in a]
    assert len(soft) == 1 and len(hard) == 1, alerts  # each said once
    assert "every NPC now answers through fallback" in hard[0]
    # The switch came after the first turn: the later turns were the fallback's.
    npc_turns = [r for r in records if r["type"] == "npc"]
    assert len(npc_turns) == 3
    first = [r for r in llm.requests if r.get("stream")]
    assert len(first) == 2 and all("You are Bartok" in r["messages"][0]["content"] for r in first)
    served = [r for r in fallback_llm.requests if r.get("stream")]
    assert len(served) >= 2 and all("You are Bartok" in r["messages"][0]["content"] for r in served)
    # The cost is the main server's reported usage, priced; the local fallback costs nothing.
    cost = json.loads((out / "latency.json").read_text())["summary"]["cost"]
    assert cost["total_usd"] == pytest.approx(_cost(llm.requests))
    assert cost["total_usd"] >= 1.2 and cost["hard_reached"] and not cost["estimated"]
    assert cost["providers"]["LLM scripted"]["calls"] == 2
    assert cost["providers"]["LLM fallback"]["cost_usd"] == 0.0
    assert cost["npcs"]["Bartok"] == pytest.approx(cost["total_usd"])
    # ... and the report says so.
    assert "## Cost" in report and f"Cost so far: ${cost['total_usd']:.4f}" in report
    assert "hard limit $1.20 (reached)" in report and "- Bartok: $" in report
    # The session's summary, written by the main LLM as the table closed, is priced too and kept
    # with the session in its memory, as the campaign memory's own cost (no NPC's).
    (summary,) = [r for r in llm.requests if not r.get("stream")]
    rows = asyncio.run(_stored_usage(out / "memory.db"))
    memory_rows = [r for r in rows if r["npc"] == ""]
    assert [(r["service"], r["model"], r["calls"]) for r in memory_rows] == [("llm", "scripted", 1)]
    used = usage(summary, 5)  # the server's unstreamed answer reports 5 tokens written
    assert memory_rows[0]["input_tokens"] == used["prompt_tokens"]
    priced = (used["prompt_tokens"] * INPUT_PRICE + used["completion_tokens"] * OUTPUT_PRICE) / 1e6
    assert memory_rows[0]["cost_usd"] == pytest.approx(priced)


async def _stored_usage(database: Path) -> list[dict[str, Any]]:
    from campaigns.memory import MemoryStore

    async with await MemoryStore.open(f"sqlite+aiosqlite:///{database}") as store:
        (session,) = await store.list_sessions()
        return await store.session_usage(session["id"])
