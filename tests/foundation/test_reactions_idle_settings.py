"""``reactions`` in campaign.yaml and ``session.idle_close_s`` in glyphoxa.yaml: defaults, the
forms a DM writes, and bad values refused at their line with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings.loader import load_config
from campaigns.yamlio import ContentError
from npcs.campaign import load_campaign

from .foundation_support import CONFIG

CAMPAIGN_HEAD = "name: The Shadowfell Conspiracy\nsystem: dnd5e\n"


def _campaign(folder: Path, tail: str) -> Path:
    (folder / "campaign.yaml").write_text(CAMPAIGN_HEAD + tail)
    return folder


def test_reactions_are_off_unless_the_campaign_says_mentioned(campaign_copy: Path) -> None:
    assert load_campaign(campaign_copy).meta.reactions == "off"
    _campaign(campaign_copy, "reactions: mentioned\n")
    assert load_campaign(campaign_copy).meta.reactions == "mentioned"


@pytest.mark.parametrize("written", ["off", "'off'", "no", "false"])
def test_an_unquoted_off_means_off(campaign_copy: Path, written: str) -> None:
    """YAML reads an unquoted off (no, false) as false; the DM means off."""
    _campaign(campaign_copy, f"reactions: {written}\n")
    assert load_campaign(campaign_copy).meta.reactions == "off"


def test_a_reaction_mode_that_is_not_one_is_refused_at_its_line(campaign_copy: Path) -> None:
    path = _campaign(campaign_copy, "reactions: mentiond\n") / "campaign.yaml"
    with pytest.raises(ContentError) as raised:
        load_campaign(campaign_copy)
    assert (
        f"{path}:3:12: reactions: 'mentiond' is not allowed; choose off or mentioned; "
        "did you mean 'mentioned'?"
    ) in str(raised.value)


def test_reactions_on_names_no_mode_and_is_refused_with_the_choices(campaign_copy: Path) -> None:
    path = _campaign(campaign_copy, "reactions: on\n") / "campaign.yaml"
    with pytest.raises(ContentError) as raised:
        load_campaign(campaign_copy)
    assert (
        f"{path}:3:12: reactions: write reactions: mentioned (NPCs react when another NPC's "
        "answer names them) or reactions: off"
    ) in str(raised.value)


def test_idle_close_defaults_to_ten_minutes_and_zero_disables(tmp_path: Path) -> None:
    assert load_config(CONFIG, environ={}).session.idle_close_s == 600
    path = tmp_path / "glyphoxa.yaml"
    path.write_text("session:\n  idle_close_s: 0\n")
    assert load_config(path, environ={}).session.idle_close_s == 0


def test_a_negative_idle_close_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text("session:\n  idle_close_s: -60\n")
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={})
    assert f"{path}:2:17: session.idle_close_s: must be at least 0" in str(raised.value)
