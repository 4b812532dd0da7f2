"""The mistakes DMs make writing NPC and table files, each refused or warned about by
``glyphoxa check`` in one exact line: file:line:column, what is wrong and the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.cli import main
from campaigns.yamlio import ContentError
from npcs.campaign import CampaignWatcher, load_campaign, scan_campaign

from .foundation_support import CONFIG


def check(campaign: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["--config", str(CONFIG), "check", str(campaign), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out


def write(campaign: Path, name: str, text: str) -> Path:
    path = campaign / name
    path.write_text(text)
    return path


MIRA = "name: Mira\npersonality: A nervous herbalist.\n"


# -- messages that show the right form ---------------------------------------------------------


def test_tools_written_as_text_shows_the_list_form(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(campaign_copy, "npcs/mira.yaml", MIRA + "tools: roll, roll_table\n")
    code, out = check(campaign_copy, capsys)
    assert code == 1
    assert f"{mira}:3:8: tools: expected a list, not text; write tools: [roll, roll_table]" in (
        out.splitlines()
    )


def test_a_sentence_written_as_text_is_shown_as_one_quoted_item(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(
        campaign_copy, "npcs/mira.yaml", MIRA + "secret_knowledge: She hid it, then fled\n"
    )
    _, out = check(campaign_copy, capsys)
    expected = (
        f"{mira}:3:19: secret_knowledge: expected a list, not text; write "
        'secret_knowledge: ["She hid it, then fled"]'
    )
    assert expected in out.splitlines()


def test_a_misplaced_key_says_where_it_belongs(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lone = write(campaign_copy, "npcs/mira.yaml", MIRA + "pitch_shift: -3\n")
    block = write(campaign_copy, "npcs/nod.yaml", "name: Nod\npersonality: x\nvoice:\n"
                  "  speed: 1.1\npitch_shift: 2\n")  # fmt: skip
    table = write(
        campaign_copy, "tables/loot.yaml", "name: loot\nweight: 3\nentries: [{text: a}]\n"
    )
    _, out = check(campaign_copy, capsys)
    lines = out.splitlines()
    assert (
        f"{lone}:3:1: 'pitch_shift' does not go at the top level; it belongs under voice:, "
        "as in voice: {pitch_shift: -3}"
    ) in lines
    assert (
        f"{block}:5:1: 'pitch_shift' does not go at the top level; move it into the voice: "
        "block above, indented like its other keys"
    ) in lines
    assert (
        f"{table}:2:1: 'weight' does not go at the top level; it belongs in each item of "
        "entries:, as in entries: [{weight: 3}]"
    ) in lines


def test_a_misspelt_tool_suggests_the_tool_not_its_neighbour(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(campaign_copy, "npcs/mira.yaml", MIRA + "tools: [roll_dice, dice, dise.*]\n")
    _, out = check(campaign_copy, capsys)
    lines = out.splitlines()
    assert f"{mira}:3:9: tools[0]: unknown tool 'roll_dice'; did you mean 'roll'?" in lines
    assert f"{mira}:3:20: tools[1]: unknown tool 'dice'; did you mean 'dice.*'?" in lines
    assert f"{mira}:3:26: tools[2]: no tool server named 'dise'; did you mean 'dice.*'?" in lines


def test_pydantic_wording_stays_out(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(
        campaign_copy,
        "npcs/mira.yaml",
        "name: ''\npersonality: x\nvoice: {speed: 9, pitch_shift: high}\naddress_only: maybe\n"
        "llm: {max_tokens: 1.5}\n",
    )
    _, out = check(campaign_copy, capsys)
    assert "Input should" not in out and "valid" not in out
    lines = out.splitlines()
    assert f"{mira}:1:7: name: must not be empty" in lines
    assert f"{mira}:3:16: voice.speed: must be at most 2" in lines
    assert f"{mira}:3:32: voice.pitch_shift: expected a number" in lines
    assert f"{mira}:4:15: address_only: expected true or false" in lines
    assert f"{mira}:5:19: llm.max_tokens: expected a whole number, not a fraction" in lines


# -- YAML that changes meaning without a word ---------------------------------------------------


def test_a_sentence_split_at_its_commas_is_a_warning(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(
        campaign_copy,
        "npcs/mira.yaml",
        MIRA + "secret_knowledge: [Her husband, Lord Aldric, pushed her]\n"
        "aliases: [Mi, the herbalist]\nfiller_lines: [Hold on, Just a moment]\n",
    )
    code, out = check(campaign_copy, capsys)
    assert code == 0  # a warning does not fail the check...
    assert out.splitlines() == [
        f"{mira}:3:19: warning: secret_knowledge: the commas split this into 3 items "
        "('Her husband' | 'Lord Aldric' | 'pushed her'); if it is one sentence, quote it as "
        'one item: - "Her husband, Lord Aldric, pushed her"',
        # aliases are not prose; "Hold on, Just a moment" reads as two lines: no warning
        f"config: {CONFIG}: ok",
        out.splitlines()[-1],
    ]
    assert check(campaign_copy, capsys, "--strict")[0] == 1  # ...unless --strict
    assert scan_campaign(campaign_copy).campaign.npcs["Mira"].secret_knowledge == [
        "Her husband",
        "Lord Aldric",
        "pushed her",
    ]


def test_a_list_item_indented_differently_is_a_warning(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = write(
        campaign_copy,
        "npcs/mira.yaml",
        MIRA + "behavior_rules:\n  - Stay in character\n   - Never reveal the secret\n"
        "  - Be kind\n",
    )
    code, out = check(campaign_copy, capsys)
    assert code == 0
    assert (
        f"{mira}:4:5: warning: line 5 ('- Never reveal the secret') is indented differently "
        "from this list item, so YAML joined them into one item: 'Stay in character - Never "
        "reveal the secret'; line the '-' up with the one above: \"  - Never reveal the secret\""
    ) in out.splitlines()


def test_a_flow_mapping_split_at_a_comma_says_so(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = write(
        campaign_copy,
        "tables/loot.yaml",
        "name: loot\nentries:\n  - {text: Chain shirt, slightly rusty}\n  - {text: Sword}\n",
    )
    code, out = check(campaign_copy, capsys)
    assert code == 1
    assert (
        f"{table}:3:25: entries[0]: 'slightly rusty' is not a key: the comma after 'Chain "
        "shirt' ended that text, so YAML read 'slightly rusty' as a key of its own; put the "
        'text in quotes: {text: "Chain shirt, slightly rusty"}'
    ) in out.splitlines()
    assert "warning" not in out  # the error explains it; no second line for the same place


def test_an_empty_value_from_a_comma_split_says_so(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entities = campaign_copy / "entities.yaml"
    text = entities.read_text()
    entities.write_text(
        text.replace("{class: ranger, level: 3}", "{class: ranger, beast master, level: 3}")
    )
    code, out = check(campaign_copy, capsys)
    assert code == 1
    assert out.splitlines()[0] == (
        f"{entities}:11:33: entities[0].attributes: 'beast master' is not a key: the comma "
        "after 'ranger' ended that text, so YAML read 'beast master' as a key of its own; put "
        'the text in quotes: {class: "ranger, beast master", level: 3}'
    )
    assert "warning" not in out


# -- no silent replacement ----------------------------------------------------------------------


@pytest.mark.parametrize("copy", ["bartok copy.yaml", "bartok~.yaml", "Bartok (2).yml"])
def test_a_backup_copy_never_replaces_the_original(
    copy: str, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = campaign_copy / "npcs" / "bartok.yaml"
    duplicate = campaign_copy / "npcs" / copy
    shutil.copyfile(original, duplicate)
    code, out = check(campaign_copy, capsys)
    assert code == 1
    assert out.splitlines()[0] == (
        f"{duplicate}:3:7: NPC name 'Bartok' is already used by {original}:3:7; every NPC "
        "file needs a name of its own (a backup copy? move it out of npcs/ or rename it to end "
        "in .bak)"
    )
    assert len([line for line in out.splitlines() if str(duplicate) in line]) == 1
    with pytest.raises(ContentError, match="NPC name 'Bartok' is already used by"):
        load_campaign(campaign_copy)


def test_backups_are_not_npc_files_and_other_files_are_named(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = campaign_copy / "npcs" / "bartok.yaml"
    shutil.copyfile(original, campaign_copy / "npcs" / "bartok.yaml.bak")
    saved_as_text = write(campaign_copy, "npcs/mira.yaml.txt", MIRA)
    code, out = check(campaign_copy, capsys)
    assert code == 0
    assert out.splitlines()[0] == (
        f"{saved_as_text}: warning: not read: NPC files end in .yaml or .yml (rename it to "
        "mira.yaml)"
    )
    assert "bak" not in out
    assert load_campaign(campaign_copy).npc_files["Bartok"] == original


def test_a_name_equal_to_another_npcs_alias_names_both_files(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bart = write(campaign_copy, "npcs/zz-bart.yaml", "name: BART\npersonality: x\n")
    code, out = check(campaign_copy, capsys)
    assert code == 1
    bartok = campaign_copy / "npcs" / "bartok.yaml"
    assert out.splitlines()[0] == (
        f"{bart}:1:7: 'BART' is already a name or alias of Bartok (the alias 'Bart' at "
        f"{bartok}:4:11); players could not tell them apart"
    )


async def test_hot_reload_refuses_a_copy_saved_beside_the_original(campaign_copy: Path) -> None:
    campaign = load_campaign(campaign_copy)
    bartok = campaign.npcs["Bartok"]
    watcher = CampaignWatcher(campaign, interval_s=0.01)
    copy = campaign_copy / "npcs" / "bartok copy.yaml"
    copy.write_text((campaign_copy / "npcs" / "bartok.yaml").read_text().replace("0.8", "0.1"))
    changes = await watcher.poll_once() + await watcher.poll_once()
    (change,) = changes
    assert change.kind == "invalid" and change.path == copy
    assert "'Bartok' is already a name or alias of Bartok" in str(change.issues[0])
    assert "a backup copy?" in str(change.issues[0])
    assert campaign.npcs["Bartok"] is bartok
    assert campaign.npc_files["Bartok"] == campaign_copy / "npcs" / "bartok.yaml"


async def test_hot_reload_applies_an_edit_and_says_its_warnings(campaign_copy: Path) -> None:
    campaign = load_campaign(campaign_copy)
    watcher = CampaignWatcher(campaign, interval_s=0.01)
    path = campaign_copy / "npcs" / "bartok.yaml"
    text = path.read_text()
    start = text.index("secret_knowledge:")
    end = text.index("behavior_rules:")
    path.write_text(text[:start] + "secret_knowledge: [He hid crates, and lied]\n" + text[end:])
    changes = await watcher.poll_once() + await watcher.poll_once()
    (change,) = changes
    assert change.kind == "updated" and change.npc is campaign.npcs["Bartok"]
    assert [str(issue) for issue in change.issues] == [
        f"{path}:19:19: warning: secret_knowledge: the commas split this into 2 items ('He hid "
        "crates' | 'and lied'); if it is one sentence, quote it as one item: - \"He hid crates, "
        'and lied"'
    ]
