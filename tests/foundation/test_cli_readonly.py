"""Commands that only read create no file: not in the current folder, not in the campaign.

The folder is what a DM has after ``glyphoxa campaign new``: a glyphoxa.yaml with the shipped
relative defaults (``.glyphoxa/memory.db``, ``.glyphoxa/calibration.json``) and a real stdio
MCP server, so a command that opened the memory, saved calibration or remembered a server's
tool listing would leave a file behind.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from campaigns.memory import MemoryStore
from tools.host.calibration import Calibration

from .foundation_support import EXAMPLE, REPO

STDIO_SERVER = REPO / "tests" / "toolhost" / "servers" / "stdio_server.py"

READ_ONLY = [
    ["check"],
    ["npc", "list"],
    ["npc", "show", "Bartok"],
    ["tools", "list"],
    ["tools", "list", "--npc", "Greymantle", "--tier", "standard"],
    ["tier", "Tell me about the Black Candle", "--npc", "Greymantle"],
    ["address", "Bartok, a pint please"],
    ["memory", "sessions"],
    ["memory", "entities", "--type", "npc"],
    ["memory", "entity", "bartok"],
    ["memory", "proposals", "--status", "all"],
    ["memory", "search", "candle"],
    ["recap"],
    ["rules", "search", "grappled"],
    ["rules", "get", "condition:grappled"],
    ["schema", "npc"],
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readonly")
    shutil.copytree(EXAMPLE, root / "campaign", ignore=shutil.ignore_patterns("*.wav"))
    folder = root / "table"
    folder.mkdir()
    srd = root / "srd"  # a tiny SRD in the 5e-database format: rules search builds its index
    srd.mkdir()
    grappled = {"index": "grappled", "name": "Grappled", "desc": ["Speed becomes 0."]}
    (srd / "5e-SRD-Conditions.json").write_text(json.dumps([grappled]))
    (srd / "5e-SRD-Spells.json").write_text("[]")
    config = {
        "campaign": {"path": str(root / "campaign")},
        "tools": {"srd_path": str(srd)},
        "mcp": {
            "servers": [
                {"name": "mis", "transport": "stdio", "connect_timeout_s": 60,
                 "command": [sys.executable, str(STDIO_SERVER)]}
            ]
        },
    }  # fmt: skip
    (folder / "glyphoxa.yaml").write_text(yaml.safe_dump(config))
    return folder


def _files(*folders: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda argv: " ".join(argv))
def test_read_only_command_writes_nothing(
    argv: list[str],
    table: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(table)
    monkeypatch.delenv("GLYPHOXA_CONFIG", raising=False)
    before = _files(table, table.parent / "campaign")
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip()
    assert "Traceback" not in captured.err
    assert _files(table, table.parent / "campaign") == before
    if argv[0] in ("memory", "recap"):
        note = (
            "note: .glyphoxa/memory.db does not exist yet (the first session creates it); "
            "showing only the campaign's entities.yaml\n"
        )
        hint = (  # commands that list sessions say where a rehearsal's are
            "a rehearsal keeps its sessions in its --out folder: glyphoxa memory sessions "
            "--url OUT/memory.db\n"
        )
        assert captured.err in (note, note + hint)


def test_reads_existing_memory_and_calibration_without_rewriting_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GLYPHOXA_CONFIG", raising=False)
    (tmp_path / "glyphoxa.yaml").write_text(f"campaign:\n  path: {EXAMPLE}\n")
    calibration = Calibration(tmp_path / ".glyphoxa" / "calibration.json")
    for _ in range(10):
        calibration.stats("dice/roll").record(900.0, True)  # measured: too slow for FAST
    calibration.save()

    async def record() -> None:
        store = await MemoryStore.open("sqlite+aiosqlite:///.glyphoxa/memory.db")
        session = await store.start_session("emberford", "Night at the Flagon")
        await store.add_utterance(session, "Arin", "Bartok, a pint!", started_at=0, ended_at=1)
        await store.end_session(session, summary="Arin ordered a pint.")
        await store.close()

    asyncio.run(record())
    before = _files(tmp_path)
    assert main(["tools", "list", "--json"]) == 0
    tools = {tool["name"]: tool for tool in json.loads(capsys.readouterr().out)["tools"]}
    assert tools["roll"]["measured_p50_ms"] == 900.0 and tools["roll"]["tier"] == "standard"
    assert main(["npc", "show", "Bartok", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["memory"]["exists"] is True and view["memory"]["sessions"] == 1
    fast = next(tier for tier in view["tiers"] if tier["selected"] == "fast")
    assert "roll" not in [tool["name"] for tool in fast["tools"]]  # measured out of FAST
    assert main(["memory", "sessions"]) == 0
    captured = capsys.readouterr()
    assert "Night at the Flagon" in captured.out and captured.err == ""
    assert _files(tmp_path) == before
