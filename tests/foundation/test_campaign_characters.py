"""``characters:`` in campaign.yaml: Discord user ids to character names, refused at their line
when an id is no Discord id, a name is an NPC's, or two players share a character."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.cli import main
from campaigns.yamlio import ContentError
from npcs.campaign import load_campaign, scan_campaign

from .foundation_support import CONFIG, EXAMPLE

HEAD = "name: The Shadowfell Conspiracy\nsystem: dnd5e\n"


def _campaign(tmp_path: Path, characters: str) -> Path:
    folder = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, folder)
    (folder / "campaign.yaml").write_text(HEAD + "characters:\n" + characters)
    return folder


def test_ids_map_to_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _campaign(
        tmp_path, "  123456789012345678: Arin Duskwalker\n  '223456789012345678': Tobble\n"
    )
    campaign = load_campaign(folder)
    assert campaign.meta.characters == {
        "123456789012345678": "Arin Duskwalker",  # an unquoted id reads as a YAML number
        "223456789012345678": "Tobble",
    }
    assert main(["--config", str(CONFIG), "check", str(folder)]) == 0, capsys.readouterr().out


def test_bad_entries_are_refused_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _campaign(
        tmp_path,
        "  123456789012345678: Arin\n"  # line 4: fine
        "  dusk_rider: Tobble\n"  # line 5: a username, not an id
        "  223456789012345678: Bartok\n"  # line 6: the NPC's name
        "  323456789012345678: arin\n"  # line 7: Arin is taken
        "  423456789012345678: the Sage\n",  # line 8: Greymantle's alias
    )
    scan = scan_campaign(folder)
    meta = str(folder / "campaign.yaml")
    found = {(issue.file, issue.line): issue.message for issue in scan.issues}
    assert set(found) == {(meta, 5), (meta, 6), (meta, 7), (meta, 8)}
    assert "'dusk_rider' is not a Discord user id" in found[(meta, 5)]
    assert "Copy User ID" in found[(meta, 5)]
    assert "is the NPC Bartok's name" in found[(meta, 6)]
    assert "'arin' is already played by 123456789012345678" in found[(meta, 7)]
    assert "the NPC Greymantle's alias 'the sage'" in found[(meta, 8)]
    with pytest.raises(ContentError, match=r"campaign\.yaml:5:3: characters: 'dusk_rider'"):
        load_campaign(folder)
    assert main(["--config", str(CONFIG), "check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{meta}:6:" in out and "Bartok" in out


def test_a_character_that_is_not_a_name_is_refused(tmp_path: Path) -> None:
    folder = _campaign(tmp_path, "  123456789012345678: {name: Arin}\n")
    (issue,) = scan_campaign(folder).issues
    assert issue.line == 4 and "characters.123456789012345678" in issue.message
