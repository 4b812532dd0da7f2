"""Fixtures of the foundation tests: fresh copies of the example campaign."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .foundation_support import EXAMPLE


@pytest.fixture
def campaign_copy(tmp_path: Path) -> Path:
    """A writable copy of the example campaign (audio files left out: nothing here plays them)."""
    target = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("*.wav"))
    return target
