"""``glyphoxa tools list|call|calibrate`` against a config with a real stdio MCP server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli import main

EXAMPLE_CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "example"
STDIO_SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One folder per module: the memory database is migrated once, not per test.
    tmp_path = tmp_path_factory.mktemp("cli")
    config = {
        "campaign": {"path": str(EXAMPLE_CAMPAIGN)},
        "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"},
        "tools": {
            "calibration_path": str(tmp_path / "calibration.json"),
            "sandbox_dir": str(tmp_path / "files"),
        },
        "mcp": {
            "servers": [
                {
                    "name": "mis",
                    "transport": "stdio",
                    "command": [sys.executable, str(STDIO_SERVER)],
                    "expose_as": {"roll": "remote_roll"},
                }
            ]
        },
    }
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_list_json_has_builtin_and_mcp_tools(config_path: Path, capsys: pytest.CaptureFixture):
    assert main(["-c", str(config_path), "tools", "list", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    tools = {t["name"]: t for t in report["tools"]}
    assert tools["roll"]["server"] == "dice" and tools["roll"]["kind"] == "builtin"
    assert tools["remote_roll"]["server"] == "mis"
    assert tools["fast"]["tier"] == "fast" and tools["fast"]["declared_max_ms"] == 200
    assert tools["legacy"]["tier"] == "deep" and tools["legacy"]["declared_p50_ms"] is None
    assert report["servers"]["mis"]["state"] == "up"


def test_list_for_npc_and_tier_table(config_path: Path, capsys: pytest.CaptureFixture):
    assert main(["-c", str(config_path), "tools", "list", "--npc", "bartok", "--tier", "fast"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["NAME", "SERVER", "TIER"]
    names = {line.split()[0] for line in out[1:]}
    assert "roll" in names and "fast" not in names  # Bartok's whitelist only
    assert all(line.split()[2] == "fast" for line in out[1:])


def test_call_ok_refused_and_bad_input(config_path: Path, capsys: pytest.CaptureFixture):
    assert main(["-c", str(config_path), "tools", "call", "fast", '{"x": 4}']) == 0
    assert json.loads(capsys.readouterr().out) == {"x": 4, "double": 8}
    # Bartok may not use the remote test tools: refused, exit code 1.
    as_bartok = ["-c", str(config_path), "tools", "call", "fast", '{"x": 4}', "--npc", "Bartok"]
    assert main(as_bartok) == 1
    assert "not available" in capsys.readouterr().out
    assert main(["-c", str(config_path), "tools", "call", "fast", "{x"]) == 2
    assert "arguments must be a JSON object" in capsys.readouterr().err
    assert main(["-c", str(config_path), "tools", "call", "nope"]) == 2
    assert "no tool named 'nope'" in capsys.readouterr().err
    assert main(["-c", str(config_path), "tools", "list", "--npc", "Nobody"]) == 2
    assert "no NPC named 'Nobody'" in capsys.readouterr().err


def test_calibrate_probes_only_safe_tools_and_persists(
    config_path: Path, capsys: pytest.CaptureFixture
):
    assert main(["-c", str(config_path), "tools", "calibrate", "--rounds", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    probed = {t["name"]: t for t in report["tools"]}
    assert probed["count"]["samples"] == 3  # idempotent, no arguments
    assert "crash" not in probed and "add_tool" not in probed  # side effects: never probed
    assert "fast" not in probed  # needs arguments a probe cannot invent
    saved = json.loads((config_path.parent / "calibration.json").read_text())
    assert len(saved["environments"][report["environment"]]["mis/count"]) == 3
