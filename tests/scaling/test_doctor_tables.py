"""``glyphoxa doctor --only tables``: the shared table state on SQLite and PostgreSQL."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


def _doctor(capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str) -> tuple[int, str]:
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(yaml.safe_dump({"campaign": {"path": str(EXAMPLE)}, "memory": {"url": url}}))
    code = main(["--config", str(config), "doctor", "--only", "tables"])
    lines = capsys.readouterr().out.strip().splitlines()
    return code, next(line for line in lines if line.split()[1] == "tables")


def test_sqlite_keeps_tables_for_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line = _doctor(capsys, tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
    assert code == 0 and line.startswith("PASS")
    assert "0 open table(s)" in line and "this one process" in line


def test_postgres_claims_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    code, line = _doctor(capsys, tmp_path, postgres_url)
    assert code == 0 and line.startswith("PASS"), line
    assert "claims exclude each other across connections" in line


def test_an_unreachable_database_fails_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, line = _doctor(capsys, tmp_path, f"postgresql+asyncpg://x@127.0.0.1:{port}/db")
    assert code == 1 and line.startswith("FAIL")
    assert "the table registry did not open" in line
    assert "fix: check memory.url and that the database server runs" in line
