"""Helpers shared by the hostile-input tests (a uniquely named module, unlike ``conftest``)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "campaigns" / "example"


@dataclass(frozen=True, slots=True)
class CheckRun:
    code: int
    out: str
    err: str


def write_campaign(root: Path, npcs: dict[str, str | bytes]) -> Path:
    """A minimal campaign folder with the given NPC files (name -> YAML text or raw bytes)."""
    (root / "npcs").mkdir(parents=True, exist_ok=True)
    (root / "campaign.yaml").write_text("name: Hostile\n", encoding="utf-8")
    for name, content in npcs.items():
        path = root / "npcs" / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def run_check(campaign: Path, config_text: str = "") -> CheckRun:
    """``glyphoxa check CAMPAIGN`` in this process: any exception escaping ``main`` fails the
    test, and so does a traceback printed by anything on the way."""
    config = campaign.parent / f"{campaign.name}-glyphoxa.yaml"
    config.write_text(config_text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--config", str(config), "check", str(campaign)])
    run = CheckRun(code, out.getvalue(), err.getvalue())
    assert "Traceback" not in run.out + run.err, run
    return run


EXTRA_MEMORY_MB = 256
"""Most extra resident memory any tool call may take, whatever its input."""


@dataclass(frozen=True, slots=True)
class ProbedCall:
    tool: str
    label: str
    seconds: float
    max_ms: float | None
    outcome: str
    """``ok``, ``tool_error`` (a clear answer) or ``crash`` (anything else escaped)."""
    detail: str


@dataclass(frozen=True, slots=True)
class Probe:
    calls: list[ProbedCall]
    extra_rss_mb: float

    def assert_within_limits(self) -> None:
        """No crash, no call past its declared maximum time, no more than 256 MB extra."""
        for call in self.calls:
            assert call.outcome != "crash", call
            assert call.max_ms is not None and call.seconds * 1000 <= call.max_ms, call
        assert self.extra_rss_mb <= EXTRA_MEMORY_MB, self


def probe_tools(spec: dict[str, Any], timeout_s: float = 120.0) -> Probe:
    """Run the calls of ``spec`` in a child process (``tool_probe.py``) and collect what they
    cost; a child that dies or hangs fails the test with what it printed."""
    script = Path(__file__).with_name("tool_probe.py")
    done = subprocess.run(
        [sys.executable, str(script)],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines and "extra_rss_mb" in lines[-1], (
        done.returncode,
        done.stdout[-2000:],
        done.stderr[-2000:],
    )
    return Probe([ProbedCall(**line) for line in lines[:-1]], lines[-1]["extra_rss_mb"])
