"""The docs site builds with ``mkdocs build --strict``, offline, and its generated reference
pages hold every key of every schema and every command of the parser.

Strict mode turns a broken link, a missing anchor, a page left out of the navigation or a hook
that fails into a failed build, so this test is what keeps the site whole in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import build_parser

from .snippets import ROOT

SCHEMA_PAGES = {
    "npc": "reference/npc",
    "campaign": "reference/campaign",
    "entities": "reference/entities",
    "table": "reference/table",
    "config": "reference/config",
    "scene": "reference/scene",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # Proxies pointing nowhere: a build that reached for the network would fail, not hang.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return out


def _page(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text(encoding="utf-8")


def _keys(schema: dict[str, object]) -> Iterator[str]:
    """Every property name anywhere in a schema."""
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            yield from value
        if isinstance(value, dict):
            yield from _keys(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from _keys(item)


def test_every_page_of_the_navigation_is_built(site: Path) -> None:
    for page in ("getting-started", "discord", "models", "authoring", "running-a-table",
                 "tools", "scaling", "performance", "security", "troubleshooting",
                 "architecture", "reference/cli", "reference/scene"):  # fmt: skip
        assert (site / page / "index.html").is_file(), page
    assert not (site / "notes").exists(), "docs/notes/ is working notes, not part of the site"


@pytest.mark.parametrize("name", sorted(SCHEMA_PAGES))
def test_schema_reference_lists_every_key(site: Path, name: str) -> None:
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
    html = _page(site, SCHEMA_PAGES[name])
    missing = sorted({key for key in _keys(schema) if f"<code>{key}</code>" not in html})
    assert not missing, f"{SCHEMA_PAGES[name]} lacks {missing}"


def test_cli_reference_lists_every_command_and_option(site: Path) -> None:
    html = _page(site, "reference/cli")
    pending = [(("glyphoxa",), build_parser())]
    while pending:
        path, parser = pending.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    command = " ".join((*path, name))
                    assert f"<code>{command}</code>" in html, command
                    pending.append(((*path, name), sub))
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"<code>{option}</code>" in html, f"{' '.join(path)} {option}"


def test_readme_links_lead_to_files() -> None:
    """The README is read on its own (on a forge, in an editor): its links must lead somewhere."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into the docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
    for page in ("docs/discord.md", "docs/models.md"):  # the first screen's promise
        assert page in text.split("## The two commands")[0], page
