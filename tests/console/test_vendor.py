"""The vendored scripts are exactly the pinned npm packages' files (MANIFEST.json), each with
its license, and every page loads scripts and styles from the bot itself, never a CDN."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from bot.frontends.console.app import STATIC
from bot.frontends.console.render import TEMPLATES

VENDOR = STATIC / "vendor"


def test_every_vendored_file_matches_its_pinned_sha256() -> None:
    manifest = json.loads((VENDOR / "MANIFEST.json").read_text())
    files = manifest["files"]
    on_disk = {p.name for p in VENDOR.iterdir()} - {"MANIFEST.json"}
    assert on_disk == set(files), "every vendored file is listed, and only those"
    for name, entry in files.items():
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert digest == entry["sha256"], (
            f"{name} differs from {entry['package']}@{entry['version']}"
        )
        if "license_file" in entry:
            assert (VENDOR / entry["license_file"]).is_file()
            assert entry["version"] in name


def test_pages_load_nothing_from_elsewhere() -> None:
    for template in Path(TEMPLATES).glob("*.html"):
        text = template.read_text()
        for url in re.findall(r'(?:src|href)="([^"]+)"', text):
            assert not re.match(r"^(https?:)?//", url), f"{template.name} loads {url}"


def test_the_tests_own_vendored_files_match_their_pinned_sha256() -> None:
    """axe-core (the accessibility audit) is the tests' only: never under static/."""
    folder = Path(__file__).parent / "vendor"
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    for name, entry in manifest["files"].items():
        digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert digest == entry["sha256"], (
            f"{name} differs from {entry['package']}@{entry['version']}"
        )
        assert (folder / entry["license_file"]).is_file()
        assert not (VENDOR / name).exists()
