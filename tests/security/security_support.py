"""Helpers shared by the hostile-input tests (a uniquely named module, unlike ``conftest``)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

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
