"""What each MCP server offered the last time it was up, kept across restarts.

Exposed names must not depend on which servers happen to be up (``tools.host.naming``), and a
call to a tool whose server is down should say so rather than "no tool named ...". Both need
the tools of a server that is down right now, so every listing is remembered in a small JSON
file beside the calibration file. A server that has never been seen is simply absent.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp.types as mt
import pydantic

__all__ = ["KnownTools", "known_tools_beside"]

log = logging.getLogger(__name__)

_VERSION = 1


def known_tools_beside(calibration_path: Path) -> Path:
    """Where the host keeps the listings: ``known_tools.json`` beside the calibration file."""
    return calibration_path.with_name("known_tools.json")


class KnownTools:
    """Server name -> its last tool listing (``mcp.types.Tool``), optionally saved to ``path``
    (``read_only``: loaded from it, never written)."""

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._tools: dict[str, list[mt.Tool]] = {}
        self._raw: dict[str, list[dict[str, Any]]] = {}
        if path is not None:
            self._load(path)

    def get(self, server: str) -> list[mt.Tool]:
        return list(self._tools.get(server, ()))

    def servers(self) -> list[str]:
        """Every server with a remembered listing."""
        return list(self._tools)

    def remember(self, server: str, tools: Sequence[mt.Tool]) -> None:
        """Record a fresh listing; the file is rewritten only when it changed."""
        raw = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]
        if self._raw.get(server) == raw:
            return
        self._raw[server], self._tools[server] = raw, list(tools)
        self._save()

    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for server, listing in data.get("servers", {}).items():
                self._tools[server] = [mt.Tool.model_validate(t, by_name=False) for t in listing]
                self._raw[server] = listing
        except (OSError, ValueError, TypeError, AttributeError, pydantic.ValidationError) as error:
            # Only a convenience: a damaged file means names are decided as if on first run.
            log.warning("known tools file %s unreadable (%s); starting fresh", path, error)
            self._tools.clear()
            self._raw.clear()

    def _save(self) -> None:
        if self.path is None or self.read_only:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".known-tools-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": _VERSION, "servers": self._raw}, handle)
            os.replace(tmp, self.path)
        except OSError as error:  # names still work for this session
            log.warning("cannot write known tools file %s: %s", self.path, error)
