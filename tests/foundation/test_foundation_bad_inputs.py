"""Each malformed file under bad/ fails ``glyphoxa check`` with file, line and a useful message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.cli import main

from .foundation_support import BAD, CONFIG

# fixture -> (where it goes in the campaign, or "config"; expected line; message fragment)
CASES: dict[str, tuple[str, int, str]] = {
    "npc_wrong_type.yaml": ("npcs/mira.yaml", 5, "voice.speed: expected a number"),
    "npc_unknown_key.yaml": (
        "npcs/mira.yaml",
        2,
        "unknown key 'personalty'; did you mean 'personality'?",
    ),
    "npc_tabs.yaml": ("npcs/mira.yaml", 4, "tab used for indentation"),
    "npc_bad_indentation.yaml": ("npcs/mira.yaml", 5, "indentation does not match"),
    "npc_duplicate_key.yaml": (
        "npcs/mira.yaml",
        4,
        "duplicate key 'name' (first defined on line 1)",
    ),
    "npc_missing_personality.yaml": ("npcs/mira.yaml", 1, "missing required key 'personality'"),
    "npc_unknown_engine.yaml": ("npcs/mira.yaml", 3, "did you mean 'realtime'?"),
    "npc_unknown_tier.yaml": (
        "npcs/mira.yaml",
        4,
        "unknown tier 'ludicrous'; choose fast, standard or deep",
    ),
    "npc_empty.yaml": (
        "npcs/mira.yaml",
        1,
        "file is empty; expected a mapping with name, personality",
    ),
    "npc_binary.yaml": ("npcs/mira.yaml", 2, "binary data (NUL byte)"),
    "npc_alias_bomb.yaml": ("npcs/mira.yaml", 3, "refusing a possible alias bomb"),
    "npc_recursive_alias.yaml": ("npcs/mira.yaml", 3, "contains it (a cycle)"),
    "npc_top_level_list.yaml": ("npcs/mira.yaml", 1, "found a list at top level"),
    "npc_python_tag.yaml": ("npcs/mira.yaml", 2, "unsupported tag"),
    "npc_unquoted_colon.yaml": ("npcs/mira.yaml", 5, "put the text in quotes"),
    "npc_unknown_tool.yaml": (
        "npcs/mira.yaml",
        3,
        "unknown tool 'rol_table'; did you mean 'roll_table'?",
    ),
    "npc_duplicate_alias.yaml": (
        "npcs/mira.yaml",
        2,
        "'bart' is already a name or alias of Bartok (the alias 'Bart' at ",
    ),
    "npc_speed_out_of_range.yaml": ("npcs/mira.yaml", 4, "voice.speed: must be at most 2"),
    "npc_not_utf8.yaml": ("npcs/mira.yaml", 2, "not UTF-8 text"),
    "npc_unclosed_quote.yaml": ("npcs/mira.yaml", 2, "this quote is never closed"),
    "npc_voice_not_mapping.yaml": (
        "npcs/mira.yaml",
        3,
        "voice: expected a mapping of keys (key: value)",
    ),
    "npc_aliases_not_list.yaml": ("npcs/mira.yaml", 4, "aliases: expected a list"),
    "entities_undefined_relation.yaml": (
        "entities.yaml",
        7,
        "'emberfort' is not a defined entity id; did you mean 'emberford'",
    ),
    "entities_duplicate_id.yaml": ("entities.yaml", 5, "entity id 'emberford' is already used"),
    "entities_bad_type.yaml": ("entities.yaml", 3, "'city' is not allowed"),
    "table_mixed_ranges.yaml": (
        "tables/weather.yaml",
        1,
        "either every entry has a range or none does",
    ),
    "table_duplicate_name.yaml": (
        "tables/zz_rumors.yaml",
        1,
        "table name 'tavern_rumors' is already used",
    ),
    "campaign_missing_name.yaml": ("campaign.yaml", 1, "missing required key 'name'"),
    "config_unknown_key.yaml": ("config", 1, "unknown key 'discrod'; did you mean 'discord'?"),
    "config_missing_env.yaml": (
        "config",
        3,
        "discord.token: environment variable GLYPHOXA_TEST_SURELY_UNSET",
    ),
    "config_bad_port.yaml": (
        "config",
        3,
        "metrics.port: must be at most 65535",
    ),
    "config_bad_auth.yaml": (
        "config",
        7,
        "'basic' is not a known type; choose bearer or oauth_client_credentials",
    ),
    "config_bad_transport.yaml": ("config", 4, "'websocket' is not allowed"),
}


def test_every_fixture_has_a_case() -> None:
    on_disk = {p.name for p in BAD.iterdir() if p.suffix == ".yaml"}
    assert on_disk == set(CASES)
    assert len(CASES) >= 20


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_check_reports_file_line_and_message(
    fixture: str, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    place, line, fragment = CASES[fixture]
    config = CONFIG
    if place == "config":
        config = BAD / fixture
        target = config
    else:
        target = campaign_copy / place
        shutil.copyfile(BAD / fixture, target)
    code = main(["--config", str(config), "check", str(campaign_copy)])
    out, err = capsys.readouterr()
    assert code == 1, out
    assert "Traceback" not in out + err
    lines = [entry for entry in out.splitlines() if entry.startswith(f"{target}:{line}")]
    assert lines, f"no problem reported at {target}:{line}:\n{out}"
    assert any(fragment in entry for entry in lines), out
    assert "problem" in err


def test_file_over_one_mebibyte_is_refused(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = campaign_copy / "npcs" / "huge.yaml"
    big.write_text("name: Huge\npersonality: big\n" + "# padding\n" * 110_000)
    assert big.stat().st_size > 1024 * 1024
    code = main(["--config", str(CONFIG), "check", str(campaign_copy)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"{big}: file is " in out and "the limit is 1048576" in out


def test_all_problems_are_reported_at_once(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for fixture in ("npc_unknown_engine.yaml", "npc_tabs.yaml", "npc_wrong_type.yaml"):
        shutil.copyfile(BAD / fixture, campaign_copy / "npcs" / fixture)
    (campaign_copy / "npcs" / "mira2.yaml").write_text(
        "name: Mira Two\npersonality: x\nengine: turbo\nbudget_tier: warp\nvoice: {speed: 9}\n"
    )
    code = main(["--config", str(CONFIG), "check", str(campaign_copy)])
    out = capsys.readouterr().out
    assert code == 1
    assert "npc_unknown_engine.yaml:3" in out
    assert "npc_tabs.yaml:4" in out
    assert "npc_wrong_type.yaml:5" in out
    mira2 = [line for line in out.splitlines() if "mira2.yaml" in line]
    assert [line.split(":")[1] for line in mira2] == ["3", "4", "5"]
