"""``glyphoxa address``, ``glyphoxa tier`` and ``glyphoxa chat`` end to end through the CLI."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from bot.cli import main

from .npcs_fake_openai import FakeOpenAI, Step

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(f"campaign:\n  path: {EXAMPLE}\n")
    return path


def test_address_json(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--config", str(config_file), "address", "Bartock, what's on tap?", "--json"])
    assert code == 0
    decision = json.loads(capsys.readouterr().out)
    assert decision["npcs"] == ["Bartok"]
    assert decision["mentions"][0]["how"] == "phonetic"


def test_address_nobody(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config_file), "address", "so who goes first?"]) == 0
    out = capsys.readouterr().out
    assert "answers: (nobody)" in out and "no clear addressee" in out


def test_tier_caps_by_budget_and_lists_visible_tools(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", str(config_file), "tier", "Take your time, friend", "--npc", "Bartok"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["selected"], result["tier"], result["capped"]) == ("deep", "fast", True)
    assert "roll" in result["visible_tools"]
    assert "search_rules" not in result["visible_tools"]
    assert main([*argv, "--override", "deep"]) == 0
    out = capsys.readouterr().out
    assert "effective: deep" in out and "DM override deep for Bartok" in out


def test_tier_explain_shows_the_deciding_rule_and_phrase(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", str(config_file), "tier", "Can you roll a d20?", "--npc", "Bartok"]
    assert main([*argv, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "selected:  fast" in out and "6. default: fast  <- decided" in out
    assert main([*argv, "--first-turn", "--explain"]) == 0
    assert "5. first turn of a conversation: yes  <- decided" in capsys.readouterr().out
    text = "Don't think too hard, just tell me about the Black Candle"
    assert main(["--config", str(config_file), "tier", text, "--explain", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["selected"], result["rule"]) == ("standard", "standard_phrase")
    assert "negated by 'don't'" in result["explain"][1]
    assert result["explain"][3].endswith("<- decided")


def test_tier_unknown_npc_is_a_clean_error(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(config_file), "tier", "hi", "--npc", "Nobody"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no NPC named 'Nobody'") and "Traceback" not in err


async def test_chat_through_an_openai_compatible_server(config_file: Path) -> None:
    def script(body: dict) -> Step:
        return Step(content="Stout and mead tonight, friend.")

    async with FakeOpenAI(script) as server:
        text = (
            f"campaign:\n  path: {EXAMPLE}\n"
            "providers:\n  llm:\n    name: openai\n    model: scripted\n"
            f"    base_url: {server.base_url}\n    api_key: test-key\n"
        )
        await asyncio.to_thread(config_file.write_text, text)
        # A real user session: the CLI in its own process, typing on its stdin.
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(config_file),
            "chat",
            "--npc",
            "Bartok",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out_bytes, err_bytes = await asyncio.wait_for(
            process.communicate(b"What's on tap?\n/quit\n"), timeout=60
        )
    assert process.returncode == 0, err_bytes.decode()
    out = out_bytes.decode()
    assert "Bartok: Stout and mead tonight, friend." in out
    body = server.requests[0]
    assert body["model"] == "scripted"
    assert body["messages"][-1]["content"] == "Answer as Bartok. Player says to you: What's on tap?"
    assert "Bartok" in body["messages"][0]["content"]


def test_address_knows_the_players_characters(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = "Barton, pass the salt, will you?"
    assert main(["--config", str(config_file), "address", line]) == 0
    assert "answers: Bartok" in capsys.readouterr().out  # a misheard Bartok, without the cast
    argv = ["--config", str(config_file), "address", line, "--character", "Barton"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "answers: (nobody)" in out and "spoken to Barton (a player's character)" in out
