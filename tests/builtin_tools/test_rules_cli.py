"""``glyphoxa rules import|search|get`` through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main

from .conftest import SRD_PATH

pytestmark = pytest.mark.skipif(not SRD_PATH.is_dir(), reason="SRD 5.1 test data not present")


def test_import_search_get(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "glyphoxa.yaml"
    config.write_text("tools:\n  srd_path: null\n", encoding="utf-8")
    db = str(tmp_path / "rules.db")
    assert main(["--config", str(config), "rules", "import", str(SRD_PATH), "--db", db]) == 0
    out = capsys.readouterr().out
    assert "SRD entries" in out and "Creative Commons Attribution 4.0" in out
    assert main(["--config", str(config), "rules", "search", "fire", "ball", "--db", db]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("spell:fireball")
    assert main(["--config", str(config), "rules", "get", "condition:grappled", "--db", db]) == 0
    assert "speed becomes 0" in capsys.readouterr().out
    assert main(["--config", str(config), "rules", "get", "spell:nope", "--db", db]) == 2
    assert "no rules entry 'spell:nope'" in capsys.readouterr().err
    assert main(["rules", "import", str(tmp_path / "missing"), "--db", db]) == 2
    assert "does not exist" in capsys.readouterr().err
