"""The reference pages are in ``docs/`` (read in the repository and an editor, not only on the
built site) and match what the code generates now."""

from __future__ import annotations

import subprocess
import sys

from .snippets import ROOT

PAGES = ("cli", "config", "npc", "campaign", "entities", "table", "scene")


def test_every_reference_page_is_committed_and_current() -> None:
    for page in PAGES:
        assert (ROOT / "docs" / "reference" / f"{page}.md").is_file(), page
    done = subprocess.run(
        [sys.executable, "scripts/docs_reference.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_scene_reference_lists_what_a_scene_file_may_say() -> None:
    text = (ROOT / "docs" / "reference" / "scene.md").read_text(encoding="utf-8")
    for key in ("`dm_speaker`", "`expect_npc`", "`wait_for_answers`", "`interrupt`"):
        assert key in text, key
    assert "base_dir" not in text  # set by the loader, never written in a scene file
