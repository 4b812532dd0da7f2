"""Alias hijack: a name another NPC already answers to, disguised by punctuation, spacing,
width or invisible characters, is refused by ``check`` and hot reload, and addressing never
depends on the order NPC files were loaded in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from npcs.addressing import AddressDetector
from npcs.campaign import CampaignWatcher, load_campaign, scan_campaign
from npcs.schema import NpcDefinition

from .security_support import run_check, write_campaign

GREYMANTLE = "name: Greymantle\naliases: [the sage]\npersonality: A sage.\n"
DISGUISES = [
    "Greymantle.",
    "Grey-mantle",
    "Greymantle\u200b",  # zero-width space
    "Grey\u00admantle",  # soft hyphen
    "Ｇｒｅｙｍａｎｔｌｅ",  # full-width letters (NFKC)
    "GREYMANTLE!",
    "Grey Mantle",  # addressing joins words: "grey mantle" is heard as "greymantle"
    "Gréymantle",
    "Sage",  # the article-free form of Greymantle's "the sage"
]


def _thief(alias: str) -> str:
    return f"name: Vex\naliases: [{alias!r}]\npersonality: A thief.\n".replace("'", '"')


@pytest.mark.parametrize("alias", DISGUISES)
def test_check_refuses_a_disguised_copy_of_another_npcs_name(tmp_path: Path, alias: str) -> None:
    campaign = write_campaign(
        tmp_path / "c", {"a_vex.yaml": _thief(alias), "b_greymantle.yaml": GREYMANTLE}
    )
    run = run_check(campaign)
    assert run.code == 1, run.out
    assert "players could not tell them apart" in run.out
    assert "already a name or alias of" in run.out


@pytest.mark.parametrize("alias", DISGUISES)
def test_addressing_does_not_depend_on_file_order(alias: str) -> None:
    """Even when a campaign bypasses ``check``, the answer is the same in either order and is
    never the thief: a form two NPCs share answers nobody rather than whoever came first."""
    greymantle = NpcDefinition(name="Greymantle", aliases=["the sage"], personality="x")
    vex = NpcDefinition(name="Vex", aliases=[alias], personality="x")
    for cast in ([vex, greymantle], [greymantle, vex]):
        decision = AddressDetector(cast).detect("p", "Greymantle, tell me everything", now=0.0)
        assert "Vex" not in decision.npcs, (alias, [n.name for n in cast], decision)
    first = AddressDetector([vex, greymantle]).detect("p", "Greymantle, hello", now=0.0)
    second = AddressDetector([greymantle, vex]).detect("p", "Greymantle, hello", now=0.0)
    assert first.npcs == second.npcs


def test_utterances_are_normalised_like_names() -> None:
    cast = [NpcDefinition(name="Zoë", aliases=[], personality="x")]
    detector = AddressDetector(cast)
    for text in ("Zoe, hello", "ZOË, hello", "Zo\u200be, hello", "Ｚｏｅ, hello"):
        assert detector.detect("p", text, now=0.0).npcs == ["Zoë"], text


def test_a_name_without_letters_is_reported(tmp_path: Path) -> None:
    text = 'name: Mira\naliases: ["!!!", "\\u200b"]\npersonality: p\n'
    run = run_check(write_campaign(tmp_path / "c", {"mira.yaml": text}))
    assert run.code == 1
    assert run.out.count("has no letters or digits") == 2


def test_find_npc_uses_the_same_normalisation(tmp_path: Path) -> None:
    campaign = load_campaign(write_campaign(tmp_path / "c", {"g.yaml": GREYMANTLE}))
    for spelling in ("greymantle", "Grey-Mantle", "Greymantle\u200b", " THE SAGE "):
        found = campaign.find_npc(spelling)
        assert found is not None and found.name == "Greymantle", spelling
    assert campaign.find_npc("!!!") is None


async def test_hot_reload_refuses_a_disguised_alias(tmp_path: Path) -> None:
    root = write_campaign(
        tmp_path / "c",
        {"greymantle.yaml": GREYMANTLE, "vex.yaml": _thief("Vex the Quick")},
    )
    scan = scan_campaign(root)
    assert scan.ok, scan.issues
    watcher = CampaignWatcher(scan.campaign, interval_s=0.01)
    (root / "npcs" / "vex.yaml").write_text(_thief("Grey-mantle\u200b"), encoding="utf-8")
    changes = []
    async with asyncio.timeout(10):
        while not changes:
            changes = await watcher.poll_once()
    assert changes[0].kind == "invalid"
    assert "already a name or alias of Greymantle" in str(changes[0].issues[0])
    assert scan.campaign.npcs["Vex"].aliases == ["Vex the Quick"]


def test_one_normalisation_for_both() -> None:
    from npcs.name_index import name_forms

    assert {name_forms(d)[-1] for d in DISGUISES} == {"greymantle", "sage"}
