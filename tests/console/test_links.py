"""Login links: signed with this process's key, valid once and until they expire; the link
file that ``glyphoxa console link`` reads is the user's alone; the CLI names what is wrong."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bot.cli import main
from bot.frontends.console.links import (
    LinkKey,
    ShareLinks,
    mint_token,
    read_link_file,
    write_link_file,
)
from campaigns.basics import GlyphoxaError


def test_a_link_works_once_before_it_expires() -> None:
    key = LinkKey()
    token = key.mint(10)
    assert key.redeem(token)
    assert not key.redeem(token)
    assert not key.redeem(mint_token(key.key, 1, now=time.time() - 120))
    assert not key.redeem(LinkKey().mint(10))
    assert not key.redeem("garbage")
    assert "key" not in repr(key).lower().replace("linkkey", "")


def test_share_links_are_kept_as_hashes_and_revoked_together() -> None:
    shares = ShareLinks()
    token = shares.create()
    link = shares.valid(token)
    assert link is not None and token not in link and shares.alive(link)
    assert shares.revoke_all() == 1
    assert not shares.alive(link) and shares.valid(token) is None


def test_the_link_file_is_private_and_names_a_running_bot(tmp_path: Path) -> None:
    path = tmp_path / ".glyphoxa" / "console.json"
    write_link_file(path, "http://127.0.0.1:8470", LinkKey(), 10)
    assert path.stat().st_mode & 0o777 == 0o600
    found = read_link_file(path)
    assert found.pid == os.getpid()
    assert found.login_url().startswith("http://127.0.0.1:8470/login/")
    path.chmod(0o644)
    with pytest.raises(GlyphoxaError, match="other users can read this file"):
        read_link_file(path)


def test_console_link_without_a_running_bot_says_how_to_start_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "glyphoxa.yaml").write_text("console:\n  link_file: state/console.json\n")
    assert main(["console", "link"]) == 2
    err = capsys.readouterr().err
    assert "state/console.json: no running Glyphoxa console found" in err
    assert "glyphoxa run" in err
