"""Measured latency of each tool: a rolling window of its last calls, kept per environment.

The window decides a tool's tier once it holds enough samples, and its error rate can demote
the tool one tier until it recovers. Windows are saved as JSON so a restart does not forget
what was learned; the key is the environment (``$GLYPHOXA_ENV`` or host name + Python
version) because a laptop and a server measure different latencies.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import socket
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError

__all__ = [
    "DEMOTE_ERROR_RATE",
    "MIN_SAMPLES",
    "WINDOW",
    "Calibration",
    "ToolStats",
    "current_environment",
]

log = logging.getLogger(__name__)

#: Calls remembered per tool.
WINDOW = 100
#: Samples needed before the measured p50 overrides the declared one (and errors can demote).
MIN_SAMPLES = 5
#: An error rate above this demotes a tool one tier.
DEMOTE_ERROR_RATE = 0.30

_FILE_VERSION = 1


def current_environment() -> str:
    """``$GLYPHOXA_ENV`` if set, else ``<hostname>-py<major>.<minor>``."""
    explicit = os.environ.get("GLYPHOXA_ENV")
    if explicit:
        return explicit
    return f"{socket.gethostname()}-py{sys.version_info.major}.{sys.version_info.minor}"


class ToolStats:
    """Rolling window of ``(duration_ms, ok)`` for one tool.

    A sorted copy of the durations is kept alongside (``bisect``), so a percentile is an index
    lookup: recording and reading stay cheap on every call.
    """

    __slots__ = ("_errors", "_samples", "_sorted")

    def __init__(self, samples: Iterable[tuple[float, bool]] = ()) -> None:
        self._samples: deque[tuple[float, bool]] = deque(maxlen=WINDOW)
        self._sorted: list[float] = []
        self._errors = 0
        for duration_ms, ok in samples:
            self.record(float(duration_ms), bool(ok))

    def __len__(self) -> int:
        return len(self._samples)

    def record(self, duration_ms: float, ok: bool) -> None:
        samples = self._samples
        if len(samples) == WINDOW:
            oldest, oldest_ok = samples[0]
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
            if not oldest_ok:
                self._errors -= 1
        samples.append((duration_ms, ok))
        bisect.insort(self._sorted, duration_ms)
        if not ok:
            self._errors += 1

    def samples(self) -> list[tuple[float, bool]]:
        return list(self._samples)

    def replace(self, samples: Iterable[tuple[float, bool]]) -> None:
        """Swap the window's content in place (registry entries keep this object)."""
        self._samples.clear()
        self._sorted.clear()
        self._errors = 0
        for duration_ms, ok in samples:
            self.record(float(duration_ms), bool(ok))

    def _percentile(self, q: float) -> float | None:
        ordered = self._sorted
        if not ordered:
            return None
        return ordered[round(q * (len(ordered) - 1))]

    @property
    def p50_ms(self) -> float | None:
        return self._percentile(0.50)

    @property
    def p99_ms(self) -> float | None:
        return self._percentile(0.99)

    @property
    def error_rate(self) -> float | None:
        if not self._samples:
            return None
        return self._errors / len(self._samples)

    @property
    def trusted(self) -> bool:
        """Enough samples for the measurement to override the declaration."""
        return len(self._samples) >= MIN_SAMPLES

    @property
    def failing(self) -> bool:
        rate = self.error_rate
        return self.trusted and rate is not None and rate > DEMOTE_ERROR_RATE


class Calibration:
    """All tools' windows for one environment, loaded from and saved to a JSON file.

    The file keeps other environments' data untouched. Keys are ``server/original_name`` so a
    rename for the LLM (``expose_as``) keeps its history. ``read_only`` loads the file but never
    writes it (commands that only look at the tools).
    """

    def __init__(
        self, path: Path | None = None, environment: str | None = None, *, read_only: bool = False
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.environment = environment or current_environment()
        self._stats: dict[str, ToolStats] = {}
        if path is not None:
            self._load(path)

    def stats(self, key: str) -> ToolStats:
        """The window of a tool, created empty on first use."""
        stats = self._stats.get(key)
        if stats is None:
            stats = self._stats[key] = ToolStats()
        return stats

    def snapshot(self) -> dict[str, list[tuple[float, bool]]]:
        return {key: stats.samples() for key, stats in self._stats.items() if len(stats)}

    def restore(self, data: Mapping[str, Iterable[tuple[float, bool]]]) -> None:
        """Adopt windows from elsewhere (e.g. the campaign memory store)."""
        for key, samples in data.items():
            self.stats(key).replace(samples)

    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            windows = data.get("environments", {}).get(self.environment, {})
            self.restore({k: [(float(d), bool(ok)) for d, ok in v] for k, v in windows.items()})
        except (OSError, ValueError, TypeError, AttributeError) as error:
            # A damaged file must not stop the bot; calibration simply starts over.
            log.warning("calibration file %s unreadable (%s); starting fresh", path, error)

    def save(self) -> None:
        """Write this environment's windows atomically, keeping other environments."""
        self.write(self.snapshot())

    def write(self, snapshot: Mapping[str, list[tuple[float, bool]]]) -> None:
        """Write a ``snapshot()`` taken earlier; safe to run in a worker thread."""
        if self.path is None or self.read_only:
            return
        path = self.path
        data: dict[str, Any] = {"version": _FILE_VERSION, "environments": {}}
        if path.exists():
            try:
                existing = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(existing.get("environments"), dict):
                    data["environments"] = existing["environments"]
            except (OSError, ValueError, AttributeError):
                log.warning("calibration file %s unreadable; rewriting it", path)
        data["environments"][self.environment] = {
            key: [[round(d, 3), ok] for d, ok in samples] for key, samples in snapshot.items()
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".calibration-", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(tmp, path)
        except OSError as error:
            raise GlyphoxaError(f"cannot write calibration file {path}: {error}") from error
