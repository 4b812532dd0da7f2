"""The ``logging:`` section of glyphoxa.yaml put to work: level, a rotating file, JSON lines.

``glyphoxa`` starts with warnings on the console (``-v``: everything) unless its host already
set logging up (pytest); a long-running command (``run``, ``rehearse``, ``serve-tool``) then
calls :func:`configure_logging` with the loaded config. Only handlers installed here are
replaced, so a host's own stay. Every handler installed here cleans each record of the
config's secrets first (``bot.settings.redact``: values from the environment, URL passwords).
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.settings.config import LoggingConfig
from bot.settings.redact import RedactingFilter
from campaigns.basics import GlyphoxaError

__all__ = ["JsonLinesFormatter", "configure_logging", "reset_logging"]

log = logging.getLogger(__name__)

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_OURS = "_glyphoxa_handler"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``
    and, when there is one, ``exception``; for log shippers and ``jq``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_text:  # already formatted (and cleaned of secrets) by RedactingFilter
            entry["exception"] = record.exc_text
        elif record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(
    config: LoggingConfig, *, verbose: bool = False, console_level: str | None = None
) -> None:
    """Route log records as ``config`` says.

    Args:
        config: level, optional file (rotated at ``max_bytes``, ``backup_count`` kept) and
            whether lines are JSON.
        verbose: ``-v``: everything (DEBUG) everywhere.
        console_level: the console's own level (a command whose output is its report keeps
            the console quiet); None means ``config.level``.

    Raises:
        GlyphoxaError: the log file cannot be opened.
    """
    level = logging.DEBUG if verbose else logging.getLevelName(config.level)
    console = logging.DEBUG if verbose else logging.getLevelName(console_level or config.level)
    formatter: logging.Formatter = (
        JsonLinesFormatter() if config.json_format else logging.Formatter(PLAIN_FORMAT)
    )
    handlers: list[logging.Handler] = [_console(console, formatter)]
    if config.file:
        handlers.append(_file(config, level, formatter))
    reset_logging()
    root = logging.getLogger()
    for handler in handlers:
        setattr(handler, _OURS, True)
        handler.addFilter(RedactingFilter())
        root.addHandler(handler)
    root.setLevel(min(level, console))
    if config.file:
        log.info("logging to %s at %s", config.file, logging.getLevelName(level))


def reset_logging() -> None:
    """Remove (and close) the handlers :func:`configure_logging` installed."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
        old.close()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (a test may swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _console(level: int, formatter: logging.Formatter) -> logging.Handler:
    handler = _StderrHandler()
    handler.setLevel(level)
    handler.setFormatter(formatter)
    return handler


def _file(config: LoggingConfig, level: int, formatter: logging.Formatter) -> logging.Handler:
    path = Path(config.file or "")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path,
            maxBytes=config.max_bytes,
            backupCount=config.backup_count,
            encoding="utf-8",
        )
    except OSError as error:
        raise GlyphoxaError(
            f"logging.file: cannot write the log file {str(path)!r}: {error.strerror}"
        ) from None
    handler.setLevel(level)
    handler.setFormatter(formatter)
    return handler
