"""The example campaign, ``load_campaign`` and ``glyphoxa npc new``."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from bot.cli import main
from bot.frontends.checking import run_check
from bot.frontends.scaffold import scaffold_npc
from campaigns.basics import GlyphoxaError, Tier
from campaigns.yamlio import ContentError
from npcs.campaign import load_campaign, scan_campaign
from npcs.campaign.checks import tool_issues
from npcs.schema import EngineKind
from tools.catalog import ToolCatalog
from tools.config import McpServerConfig

from .foundation_support import CONFIG, EXAMPLE


def test_example_passes_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(CONFIG), "check", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "campaign 'The Shadowfell Conspiracy'" in out and "NPCs" in out


def test_realtime_npc_without_provider_is_a_note_not_a_failure() -> None:
    report = run_check(EXAMPLE, config_path=CONFIG)
    assert report.ok
    assert [n for n in report.notes if "Whisper uses engine realtime" in n]


def test_example_covers_engines_tiers_and_content() -> None:
    campaign = load_campaign(EXAMPLE)
    assert campaign.meta.name and campaign.meta.system == "dnd5e"
    assert len(campaign.npcs) >= 4
    assert {npc.engine for npc in campaign.npcs.values()} == set(EngineKind)
    assert {npc.budget_tier for npc in campaign.npcs.values()} == set(Tier)
    assert campaign.find_npc("bart") is campaign.npcs["Bartok"]
    assert campaign.npcs["Whisper"].address_only
    types = {entity.type for entity in campaign.entities.entities}
    assert {"player_character", "npc", "location", "faction", "item", "quest"} <= types
    assert len(campaign.entities.relations) >= 10
    assert {"tavern_rumors", "street_encounters"} <= set(campaign.tables)
    assert {"tavern", "tension"} <= set(campaign.ambience)
    assert campaign.npc_files["Bartok"].name == "bartok.yaml"


def test_example_ambience_is_small_real_audio() -> None:
    files = [f for mood in load_campaign(EXAMPLE).ambience.values() for f in mood]
    assert len(files) >= 2
    for path in files:
        assert path.stat().st_size < 200 * 1024
        with wave.open(str(path)) as audio:
            seconds = audio.getnframes() / audio.getframerate()
            assert 1.0 <= seconds <= 10.0
            frames = audio.readframes(audio.getnframes())
            assert any(frames)  # not silence


def test_tool_names_builtin_and_mcp_rules() -> None:
    scan = scan_campaign(EXAMPLE)
    assert tool_issues(scan.campaign, scan.documents, ToolCatalog.from_config()) == []
    bartok = scan.campaign.npcs["Bartok"]
    bartok.tools[:] = ["*", "dice.*", "lore__lookup", "wa_search", "lore.*", "nope__x", "rol"]
    servers = [
        McpServerConfig(name="lore", transport="stdio", command="x"),
        McpServerConfig(
            name="wa", transport="streamable-http", url="http://h/mcp", expose_as={"s": "wa_search"}
        ),
    ]
    issues = tool_issues(scan.campaign, scan.documents, ToolCatalog.from_config(servers))
    assert [i.message.split(":")[0] for i in issues] == ["tools[5]", "tools[6]"]
    assert "names no configured tool server ('nope')" in issues[0].message
    assert "did you mean 'roll'?" in issues[1].message


def test_load_campaign_raises_every_problem(campaign_copy: Path) -> None:
    (campaign_copy / "npcs" / "a.yaml").write_text("name: A\nengine: x\n")
    (campaign_copy / "tables" / "t.yaml").write_text("name: Bad Name\nentries: []\n")
    with pytest.raises(ContentError) as raised:
        load_campaign(campaign_copy)
    files = {Path(issue.file).name for issue in raised.value.issues}
    assert files == {"a.yaml", "t.yaml"}
    assert len(raised.value.issues) >= 4


def test_missing_campaign_folder_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(GlyphoxaError, match="campaign folder not found"):
        load_campaign(tmp_path / "nowhere")


def test_npc_new_scaffolds_a_file_that_passes_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = tmp_path / "fresh"
    assert main(["campaign", "new", "Fresh", "--dir", str(campaign)]) == 0
    code = main(["--config", str(CONFIG), "npc", "new", "Old Mag", "--campaign", str(campaign)])
    assert code == 0
    created = campaign / "npcs" / "old-mag.yaml"
    text = created.read_text()
    assert text.startswith("# yaml-language-server: $schema=")
    assert text.count("#") > 10  # commented
    report = run_check(campaign, config_path=CONFIG)
    assert report.ok, [str(i) for i in report.issues]
    assert report.campaign is not None and report.campaign.npcs["Old Mag"].tools == ["roll"]
    # second time: refused, the file is kept
    assert main(["--config", str(CONFIG), "npc", "new", "Old Mag", "--campaign", str(campaign)])
    assert "already exists" in capsys.readouterr().err
    assert created.read_text() == text


@pytest.mark.parametrize("engine", [e.value for e in EngineKind])
def test_npc_new_every_engine_passes(engine: str, campaign_copy: Path) -> None:
    path = scaffold_npc(f"Test {engine}", campaign_copy, engine=engine, tier="deep")
    assert path.parent == campaign_copy / "npcs"
    assert run_check(campaign_copy, config_path=CONFIG).ok


def test_npc_new_refuses_a_taken_name(campaign_copy: Path) -> None:
    with pytest.raises(GlyphoxaError, match="already a name or alias"):
        scaffold_npc("the barkeep", campaign_copy)
    assert not (campaign_copy / "npcs" / "the-barkeep.yaml").exists()


def test_npc_new_quotes_odd_names(campaign_copy: Path) -> None:
    path = scaffold_npc('Ser "Quote": Jr. #1', campaign_copy)
    assert load_campaign(campaign_copy).npcs['Ser "Quote": Jr. #1'].name == 'Ser "Quote": Jr. #1'
    assert path.name == "ser-quote-jr-1.yaml"
