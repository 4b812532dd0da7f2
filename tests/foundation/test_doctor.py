"""``glyphoxa doctor`` on the healthy local stack passes; each broken part fails with its own
one line and fix, and the exit code says so."""

from __future__ import annotations

import base64
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from npcs.inference.server import llama_cpp_available

from .foundation_support import EXAMPLE


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(tmp_path: Path, **sections: Any) -> Path:
    data = {
        "campaign": {"path": str(EXAMPLE), "hot_reload": False},
        "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"},
        "tools": {"sandbox_dir": str(tmp_path / "files"),
                  "calibration_path": str(tmp_path / "calibration.json")},
        **sections,
    }  # fmt: skip
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def doctor(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    """Run the CLI; returns its exit code and its lines keyed by check name."""
    code = main(["--config", str(config), "doctor", *args])
    lines = capsys.readouterr().out.strip().splitlines()
    by_check = {line.split()[1]: line for line in lines[:-1]}
    by_check["summary"] = lines[-1]
    return code, by_check


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python[server] missing")
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing")
def test_the_healthy_offline_stack_passes_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = doctor(capsys, write_config(tmp_path))
    assert code == 0, "\n".join(lines.values())
    expected = ["config", "campaign", "opus", "espeak", "voices", "vad", "stt", "turn", "llm",
                "memory", "tables", "tools", "discord-token"]  # fmt: skip
    assert list(lines)[:-1] == expected
    assert all(lines[name].startswith("PASS") for name in expected[:-1])
    assert lines["discord-token"].startswith("SKIP")  # offline: only glyphoxa run needs it
    assert "answered a chat and called a tool" in lines["llm"]
    assert lines["summary"].startswith("doctor: 12 passed, 0 failed, 1 skipped in ")
    seconds = float(lines["summary"].rsplit(" in ", 1)[1].split()[0])
    assert seconds < 60


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--config", str(write_config(tmp_path)), "doctor", "--only", "memory", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] is True
    assert [c["check"] for c in report["checks"]] == ["config", "campaign", "memory"]
    assert all(c["status"] == "PASS" and c["seconds"] >= 0 for c in report["checks"])


def test_a_bad_config_fails_with_file_line_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(f"campaign:\n  path: {EXAMPLE}\ndiscrod: {{}}\n")
    code, lines = doctor(capsys, config, "--only", "memory")
    assert code == 1
    assert lines["config"].startswith("FAIL")
    assert f"{config}:3:1: unknown key 'discrod'; did you mean 'discord'?" in lines["config"]
    assert lines["config"].endswith("-> fix: fix the file; glyphoxa check lists every problem")
    assert lines["summary"].endswith("FAIL: config")


def test_a_missing_whisper_model_fails_the_stt_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-whisper-model"
    stt = {"name": "faster-whisper", "model": str(missing)}
    code, lines = doctor(capsys, write_config(tmp_path, providers={"stt": stt}), "--only", "stt")
    assert code == 1 and lines["voices"].startswith("PASS")
    assert lines["stt"].startswith("FAIL") and "speech recognizer did not load" in lines["stt"]
    assert str(missing) in lines["stt"] and "-> fix: check providers.stt.model" in lines["stt"]


def test_a_missing_turn_model_fails_the_turn_check_and_off_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-turn-model.onnx"
    speech = {"turn": {"model_path": str(missing)}}
    code, lines = doctor(capsys, write_config(tmp_path, speech=speech), "--only", "turn")
    assert code == 1 and lines["voices"].startswith("PASS")
    assert lines["turn"].startswith("FAIL") and str(missing) in lines["turn"]
    assert "after the 500 ms hangover instead" in lines["turn"]
    assert "-> fix: ./scripts/setup (installs pipecat-ai==1.14.0 --no-deps)" in lines["turn"]
    off = {"turn": {"detector": "off"}}
    code, lines = doctor(capsys, write_config(tmp_path, speech=off), "--only", "turn")
    assert code == 0 and lines["turn"].startswith("PASS")
    assert "turns end after the 500 ms VAD hangover" in lines["turn"]


def test_the_turn_model_scores_the_finished_sample_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = doctor(capsys, write_config(tmp_path), "--only", "turn")
    assert code == 0 and lines["turn"].startswith("PASS"), lines["turn"]
    score = float(lines["turn"].split("a finished line scores ")[1].split(";")[0])
    assert score >= 0.5  # speech.turn.threshold: the sample line sounds finished


@pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python[server] missing")
def test_a_missing_llm_model_file_fails_the_llm_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-model.gguf"
    llm = {"name": "local", "options": {"model_path": str(missing)}}
    code, lines = doctor(capsys, write_config(tmp_path, providers={"llm": llm}), "--only", "llm")
    assert code == 1
    assert f"LLM model file not found: {missing}" in lines["llm"]
    assert lines["llm"].endswith("-> fix: fix providers.llm.options.model_path")


@pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python[server] missing")
def test_a_model_llama_cpp_cannot_load_fails_in_the_probe_not_in_the_doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    llm = {"name": "local", "options": {"model_path": str(broken)}}
    code, lines = doctor(capsys, write_config(tmp_path, providers={"llm": llm}), "--only", "llm")
    assert code == 1
    assert "FAIL  llm" in lines["llm"] and "llama.cpp probe exited with code 1" in lines["llm"]


def test_an_llm_endpoint_on_a_closed_port_fails_the_llm_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port()
    llm = {"name": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "api_key": "k",
           "model": "m"}  # fmt: skip
    code, lines = doctor(capsys, write_config(tmp_path, providers={"llm": llm}), "--only", "llm")
    assert code == 1
    assert f"LLM server unreachable at http://127.0.0.1:{port}/v1/" in lines["llm"]
    assert "-> fix: check providers.llm.base_url" in lines["llm"]


def test_memory_on_a_closed_port_fails_the_memory_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql+asyncpg://glyphoxa@127.0.0.1:{closed_port()}/glyphoxa"
    config = write_config(tmp_path)
    data = yaml.safe_load(config.read_text())
    data["memory"]["url"] = url
    config.write_text(yaml.safe_dump(data))
    code, lines = doctor(capsys, config, "--only", "memory")
    assert code == 1 and "campaign memory did not open" in lines["memory"]
    assert "-> fix: check memory.url and that the database server runs" in lines["memory"]


def test_a_dead_mcp_server_fails_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = [{"name": "broken", "transport": "stdio", "command": ["false"],
                "connect_timeout_s": 3}]  # fmt: skip
    code, lines = doctor(capsys, write_config(tmp_path, mcp={"servers": servers}), "--only", "mcp")
    assert code == 1
    assert (
        lines["mcp:broken"].startswith("FAIL")
        and "MCP server broken (stdio)" in lines["mcp:broken"]
    )
    assert lines["mcp:broken"].endswith("-> fix: check mcp.servers[].command runs on its own")


def _token(user_id: str) -> str:
    head = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"{head}.GhXyZa.{'x' * 38}"


@pytest.mark.parametrize(
    ("token", "flag", "status", "text"),
    [
        (None, (), "SKIP", "not set; only glyphoxa run needs it"),
        (None, ("--discord",), "FAIL", "DISCORD_TOKEN is not set -> fix: Developer Portal"),
        ("not-a-token", (), "FAIL", "the token has no dots (11 characters); a bot token is"),
        ("Bot " + _token("123456789012345678"), (), "FAIL", 'the token starts with "Bot "'),
        (_token("123456789012345678"), (), "PASS", "application id 123456789012345678"),
    ],
)
def test_the_discord_token_check(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    token: str | None,
    flag: tuple[str, ...],
    status: str,
    text: str,
) -> None:
    if token is None:
        monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    else:
        monkeypatch.setenv("DISCORD_TOKEN", token)
    config = write_config(tmp_path, discord={"token": "${DISCORD_TOKEN:-}"})
    code, lines = doctor(capsys, config, "--only", "discord-token", *flag)
    assert lines["discord-token"].startswith(status) and text in lines["discord-token"]
    assert code == (1 if status == "FAIL" else 0)
    if token:
        assert token.split()[-1] not in "\n".join(lines.values())  # never printed
