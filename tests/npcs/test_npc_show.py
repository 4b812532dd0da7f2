"""``glyphoxa npc show`` shows what the LLM really receives: checked against a real turn.

The NPC talks through ``glyphoxa chat`` (its own process, the real engine and tool host) to a
local server speaking OpenAI's wire protocol; the system prompt and the tools in the request
the server received must be the ones ``npc show`` printed for that tier.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest

from bot.cli import main

from .npcs_fake_openai import FakeOpenAI, Step

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


async def _chat(config: Path, npc: str, line: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "-c", str(config), "chat", "--npc", npc,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _out, err = await asyncio.wait_for(
        process.communicate(f"{line}\n/quit\n".encode()), timeout=120
    )
    assert process.returncode == 0, err.decode()
    return err.decode()


@pytest.mark.parametrize(
    ("npc", "line"),
    [
        ("Greymantle", "Greymantle, tell me about the Black Candle."),  # STANDARD phrase
        ("Greymantle", "Greymantle, take your time and search the web for it."),  # DEEP
        ("Bartok", "Bartok, what's on tap?"),  # capped by his FAST budget
    ],
)
async def test_show_matches_the_request_of_a_real_turn(
    npc: str,
    line: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    async with FakeOpenAI(lambda body: Step(content="Indeed.")) as server:
        config = tmp_path / "glyphoxa.yaml"
        text = (
            f"campaign:\n  path: {EXAMPLE}\n"
            "providers:\n  llm:\n    name: openai\n    model: scripted\n"
            f"    base_url: {server.base_url}\n    api_key: test-key\n"
        )
        await asyncio.to_thread(config.write_text, text)
        err = await _chat(config, npc, line)
    tier = re.search(r"^\[(fast|standard|deep): ", err, re.M)
    assert tier, err
    [body] = server.requests
    offered = sorted(tool["function"]["name"] for tool in body.get("tools", []))

    code = await asyncio.to_thread(main, ["-c", str(config), "npc", "show", npc, "--json"])
    assert code == 0
    view = json.loads(capsys.readouterr().out)
    shown = next(t for t in view["tiers"] if t["effective"] == tier.group(1))
    assert body["messages"][0] == {"role": "system", "content": shown["system_prompt"]}
    assert sorted(tool["name"] for tool in shown["tools"]) == offered
    assert offered  # every case offers tools: the comparison is not between two empty lists
    assert sorted(await asyncio.to_thread(os.listdir, tmp_path)) == ["glyphoxa.yaml"]
