"""One convention on every command: ``-c CONFIG`` everywhere, ``--campaign DIR`` on every
command that works on a campaign, and a clear refusal (with the commands that take it) on the
others; ``glyphoxa schema scene`` like every other file kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import build_parser, main
from bot.frontends.commands._options import CampaignRefused, walk_parsers

from .foundation_support import CONFIG, EXAMPLE


def test_every_command_takes_config_and_answers_campaign() -> None:
    for path, parser in walk_parsers(build_parser()):
        if not path:
            continue
        options = parser._option_string_actions
        assert "-c" in options and "--config" in options, path
        assert "--campaign" in options, path


def test_voices_takes_campaign_and_names_the_npcs_of_each_voice(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = campaign_copy / "npcs" / "mira.yaml"
    mira.write_text("name: Mira\npersonality: x\nvoice: {provider: espeak, voice: en-us+f3}\n")
    code = main(["voices", "--campaign", str(campaign_copy), "-c", str(CONFIG), "--json"])
    listing = json.loads(capsys.readouterr().out)
    assert code == 0
    (joe,) = listing["piper"]["voices"]
    assert joe["default"] and joe["used_by"] == ["Bartok", "Greymantle", "Captain Vessa", "Whisper"]
    english = [v for v in listing["espeak"]["voices"] if v["name"] == "en-us"]
    if english:  # espeak-ng installed
        assert english[0]["used_by"] == ["Mira"]
    assert listing["espeak"]["npcs"][0]["npc"] == "Mira"
    main(["voices", "--campaign", str(campaign_copy), "--provider", "piper"])
    out = capsys.readouterr().out
    assert "(default)  <- Bartok, Greymantle, Captain Vessa, Whisper" in out


def test_a_command_that_works_on_no_campaign_refuses_it_clearly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["schema", "npc", "--campaign", str(EXAMPLE)])
    assert stopped.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(
        "glyphoxa schema: error: --campaign: 'glyphoxa schema' works on no campaign; the "
        "commands that do take --campaign DIR: address, campaign, chat, check, doctor,"
    )
    refusals = [
        " ".join(path)
        for path, parser in walk_parsers(build_parser())
        if path and isinstance(parser._option_string_actions["--campaign"], CampaignRefused)
    ]
    assert "voices" not in refusals and "campaign new" not in refusals
    assert {"schema", "rules search", "bench", "discord setup"} <= set(refusals)


def test_campaign_new_takes_the_folder_as_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sunken"
    assert main(["campaign", "new", "The Sunken Crown", "--campaign", str(folder)]) == 0
    assert (folder / "campaign.yaml").is_file()


def test_schema_scene(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "scene"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"].startswith("Glyphoxa rehearsal scene")
    assert {"lines", "dm", "players", "dm_speaker"} <= set(schema["properties"])
    assert "base_dir" not in schema["properties"]
