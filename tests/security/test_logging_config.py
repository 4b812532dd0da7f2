"""The ``logging:`` section is honoured: level, a size-rotated file, JSON lines (it was never
read: only ``-v`` worked)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings.config import LoggingConfig


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    from bot.telemetry.logging_setup import reset_logging

    reset_logging()
    root.setLevel(level)


def test_glyphoxa_run_writes_json_lines_to_the_configured_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_file = tmp_path / "logs" / "glyphoxa.jsonl"
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        f"logging:\n  level: DEBUG\n  file: {log_file}\n  json_format: true\n", encoding="utf-8"
    )
    assert main(["--config", str(config), "run"]) == 2  # no token: stops after reading config
    assert "discord.token is empty" in capsys.readouterr().err
    entries = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
    assert entries and entries[0]["message"].startswith(f"logging to {log_file}")
    assert {"time", "level", "logger", "message"} <= set(entries[0])


def test_file_rotates_and_keeps_backup_count(tmp_path: Path) -> None:
    from bot.telemetry.logging_setup import configure_logging

    log_file = tmp_path / "bot.log"
    configure_logging(
        LoggingConfig(level="INFO", file=str(log_file), max_bytes=2000, backup_count=2)
    )
    noisy = logging.getLogger("glyphoxa.test.noisy")
    for index in range(200):
        noisy.info("line %d %s", index, "x" * 40)
    noisy.debug("below the level: never written")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["bot.log", "bot.log.1", "bot.log.2"]
    assert all((tmp_path / name).stat().st_size <= 2000 for name in files)
    text = "".join((tmp_path / name).read_text() for name in files)
    assert "line 199" in text and "below the level" not in text
    assert " INFO glyphoxa.test.noisy: line 199 " in log_file.read_text()


def test_an_unwritable_log_file_is_a_clear_error(tmp_path: Path) -> None:
    from bot.telemetry.logging_setup import configure_logging
    from campaigns.basics import GlyphoxaError

    (tmp_path / "file").write_text("x")
    with pytest.raises(GlyphoxaError, match=r"logging\.file: cannot write the log file"):
        configure_logging(LoggingConfig(file=str(tmp_path / "file" / "bot.log")))


def test_exceptions_become_one_json_line(tmp_path: Path) -> None:
    from bot.telemetry.logging_setup import configure_logging

    log_file = tmp_path / "bot.jsonl"
    configure_logging(LoggingConfig(level="INFO", file=str(log_file), json_format=True))
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("glyphoxa.test").exception("it failed")
    last = json.loads(log_file.read_text().splitlines()[-1])
    assert last["level"] == "ERROR" and "ValueError: boom" in last["exception"]
