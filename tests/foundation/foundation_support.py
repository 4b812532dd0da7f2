"""Paths shared by the foundation tests (a uniquely named module, unlike ``conftest``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "campaigns" / "example"
BAD = Path(__file__).resolve().parent / "bad"
CONFIG = REPO / "glyphoxa.yaml"
