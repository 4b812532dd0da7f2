"""How commands find the config and the campaign: check's order, campaign new, npc new."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.cli import main
from bot.frontends.checking import run_check
from npcs.campaign import load_campaign

from .foundation_support import EXAMPLE


@pytest.fixture
def empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DM's fresh folder: no glyphoxa.yaml, no campaign, no $GLYPHOXA_CONFIG."""
    folder = tmp_path / "table"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("GLYPHOXA_CONFIG", raising=False)
    return folder


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_reports_a_config_typo_not_a_missing_campaign(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (empty_folder / "glyphoxa.yaml").write_text("campain:\n  path: campaigns/mine\n")
    code, out, err = _run(capsys, "check")
    assert code == 1
    assert out == "glyphoxa.yaml:1:1: unknown key 'campain'; did you mean 'campaign'?\n"
    assert err.splitlines() == [
        "note: campaign not checked: glyphoxa.yaml has errors; fix them first, or name the "
        "folder: glyphoxa check --campaign DIR",
        "1 problem found",
    ]
    assert "campaign folder not found" not in out + err


def test_check_lists_config_problems_before_the_campaigns(
    empty_folder: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (campaign_copy / "npcs" / "broken.yaml").write_text("name: Broken\nengine: steam\n")
    (empty_folder / "glyphoxa.yaml").write_text(
        f"campaign:\n  path: {campaign_copy}\nmemroy: {{}}\n"
    )
    code, out, _ = _run(capsys, "check")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "glyphoxa.yaml:3:1: unknown key 'memroy'; did you mean 'memory'?"
    assert any(line.startswith(f"{campaign_copy}/npcs/broken.yaml:2:9: ") for line in lines[1:])


def test_check_names_a_missing_campaign_and_the_fix(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "check")
    assert code == 1
    assert out == (
        "campaigns/example: campaign folder not found (the default campaign.path); "
        "create it with: glyphoxa campaign new NAME --dir campaigns/example\n"
    )
    code, out, _ = _run(capsys, "check", "--campaign", "nowhere")
    assert out == (
        "nowhere: campaign folder not found (--campaign); "
        "create it with: glyphoxa campaign new NAME --dir nowhere\n"
    )


def test_check_takes_the_folder_as_option_or_argument(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "check", "--campaign", str(EXAMPLE))[0] == 0
    assert _run(capsys, "check", str(EXAMPLE))[0] == 0
    code, _, err = _run(capsys, "check", "other", "--campaign", str(EXAMPLE))
    assert code == 2
    assert err == (
        f"error: check: two campaign folders given (other and --campaign {EXAMPLE}); "
        "name one, with --campaign DIR\n"
    )


def test_check_json_shape(empty_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--campaign", str(EXAMPLE), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["problems"] == []
    assert report["config"] == {"path": None, "ok": True}
    assert report["campaign"]["name"] == "The Shadowfell Conspiracy"
    assert {"Bartok", "Greymantle"} <= set(report["campaign"]["npcs"])
    assert report["campaign"]["tables"] == ["street_encounters", "tavern_rumors"]
    assert set(report) == {"ok", "config", "campaign", "problems", "warnings", "notes"}
    (empty_folder / "glyphoxa.yaml").write_text("campain: {}\n")
    code, out, _ = _run(capsys, "check", "--json")
    report = json.loads(out)
    assert code == 1 and report["campaign"] is None
    assert report["problems"] == [
        {
            "file": "glyphoxa.yaml",
            "line": 1,
            "column": 1,
            "message": "unknown key 'campain'; did you mean 'campaign'?",
        }
    ]


def test_campaign_new_scaffolds_a_campaign_that_passes_check(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "campaign", "new", "The Sunken Crown")
    folder = Path("campaigns/the-sunken-crown")
    assert code == 0
    assert out.splitlines()[0] == f"created campaign 'The Sunken Crown' in {folder}:"
    assert f"next: glyphoxa check --campaign {folder}" in out
    files = ["campaign.yaml", "entities.yaml", "npcs/mira.yaml", "tables/rumors.yaml"]
    for name in files:
        path = folder / name
        first = path.read_text().splitlines()[0]
        match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
        assert match, (name, first)
        schema = (path.parent / match.group(1)).resolve()
        assert schema.is_file(), schema  # the editor finds it
        assert json.loads(schema.read_text())["$schema"].startswith("https://json-schema.org/")
    assert _run(capsys, "check", "--campaign", str(folder))[0] == 0
    campaign = load_campaign(folder)
    assert campaign.name == "The Sunken Crown"
    assert campaign.npcs["Mira"].tools == ["roll", "roll_table"]
    assert set(campaign.tables) == {"rumors"} and len(campaign.entities.entities) == 2
    assert campaign.find_npc("innkeeper") is campaign.npcs["Mira"]


def test_campaign_new_never_overwrites(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = empty_folder / "mine"
    (folder / "npcs").mkdir(parents=True)
    mine = "# my own notes\nentities: []\n"
    (folder / "entities.yaml").write_text(mine)
    npc = "name: Old Mag\npersonality: A hedge witch.\n"
    (folder / "npcs" / "mag.yaml").write_text(npc)
    code, out, _ = _run(capsys, "campaign", "new", "Mine", "--dir", str(folder), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["kept"] == [str(folder / "entities.yaml")]
    created = [str(folder / "campaign.yaml"), str(folder / "tables/rumors.yaml")]
    assert sorted(result["created"]) == created
    assert (folder / "entities.yaml").read_text() == mine
    assert not (folder / "npcs" / "mira.yaml").exists()  # npcs/ had an NPC already
    assert run_check(folder).ok
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, _, err = _run(capsys, "campaign", "new", "Mine", "--dir", str(folder))
    assert code == 2
    assert err == (
        f"error: {folder} is already a campaign ({folder}/campaign.yaml exists); "
        f"add an NPC with: glyphoxa npc new NAME --campaign {folder}\n"
    )
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_npc_new_uses_the_configured_campaign_and_creates_none(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "npc", "new", "Old Mag")
    assert code == 2
    assert err == (
        "error: campaigns/example: campaign folder not found (the default campaign.path); "
        "create it with: glyphoxa campaign new NAME --dir campaigns/example\n"
    )
    (empty_folder / "glyphoxa.yaml").write_text("campaign:\n  path: campaigns/mine\n")
    code, _, err = _run(capsys, "npc", "new", "Old Mag")
    assert err == (
        "error: campaigns/mine: campaign folder not found (campaign.path in glyphoxa.yaml); "
        "create it with: glyphoxa campaign new NAME --dir campaigns/mine\n"
    )
    code, _, err = _run(capsys, "npc", "new", "Old Mag", "--campaign", "typo")
    assert err == (
        "error: typo: campaign folder not found (--campaign); "
        "create it with: glyphoxa campaign new NAME --dir typo\n"
    )
    assert sorted(p.name for p in empty_folder.iterdir()) == ["glyphoxa.yaml"]
    assert _run(capsys, "campaign", "new", "Mine", "--dir", "campaigns/mine")[0] == 0
    code, out, _ = _run(capsys, "npc", "new", "Old Mag")
    assert code == 0
    assert out == (
        "wrote campaigns/mine/npcs/old-mag.yaml; edit it, then run: "
        "glyphoxa check --campaign campaigns/mine\n"
    )
    assert _run(capsys, "check")[0] == 0


def test_doctor_takes_the_campaign_like_every_command(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "campaign", "new", "Crown", "--dir", "crown")[0] == 0
    code, out, _ = _run(capsys, "doctor", "--only", "campaign", "--campaign", "crown", "--json")
    checks = {check["check"]: check for check in json.loads(out)["checks"]}
    assert code == 0
    assert checks["campaign"]["status"] == "PASS"
    assert checks["campaign"]["detail"] == "Crown: 1 NPCs (Mira)"
