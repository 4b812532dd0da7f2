"""Hot reload with real file edits: updates flow, a broken edit keeps the last good NPC."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from npcs.campaign import CampaignWatcher, NpcChange, load_campaign

TIMEOUT_S = 5.0


async def _next(watcher: CampaignWatcher) -> NpcChange:
    return await asyncio.wait_for(anext(watcher), TIMEOUT_S)


def _edit(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    if path.stat().st_mtime_ns == before:  # coarse-mtime filesystems: make the change visible
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


async def test_edits_flow_and_bad_edits_keep_the_last_good_definition(campaign_copy: Path) -> None:
    campaign = load_campaign(campaign_copy)
    watcher = CampaignWatcher(campaign, interval_s=0.02)
    bartok_file = campaign_copy / "npcs" / "bartok.yaml"
    original = bartok_file.read_text()

    _edit(bartok_file, original.replace("budget_tier: fast", "budget_tier: standard"))
    change = await _next(watcher)
    assert (change.kind, change.name) == ("updated", "Bartok")
    assert change.npc is not None and change.npc.budget_tier.label == "standard"
    assert campaign.npcs["Bartok"] is change.npc

    good = campaign.npcs["Bartok"]
    _edit(bartok_file, original.replace("engine: cascaded", "engine: cascadd"))
    change = await _next(watcher)
    assert change.kind == "invalid" and change.npc is good
    assert campaign.npcs["Bartok"] is good
    assert change.issues and change.issues[0].line is not None
    assert "did you mean 'cascaded'?" in change.issues[0].message

    _edit(bartok_file, "name: Bartok\n\tpersonality: broken\n")
    change = await _next(watcher)
    assert change.kind == "invalid" and "tab" in change.issues[0].message
    assert campaign.npcs["Bartok"] is good

    _edit(bartok_file, original.replace("Gruff but warm", "Grumpy but kind"))
    change = await _next(watcher)
    assert change.kind == "updated" and "Grumpy" in campaign.npcs["Bartok"].personality
    watcher.close()


async def test_add_rename_clash_and_remove(campaign_copy: Path) -> None:
    campaign = load_campaign(campaign_copy)
    watcher = CampaignWatcher(campaign, interval_s=0.02)
    new_file = campaign_copy / "npcs" / "mira.yaml"

    _edit(new_file, "name: Mira\npersonality: A nervous herbalist.\n")
    change = await _next(watcher)
    assert (change.kind, change.name) == ("added", "Mira")
    assert "Mira" in campaign.npcs

    _edit(new_file, "name: Mirabel\npersonality: A nervous herbalist.\n")
    change = await _next(watcher)
    assert (change.kind, change.name, change.previous_name) == ("updated", "Mirabel", "Mira")
    assert "Mira" not in campaign.npcs and "Mirabel" in campaign.npcs

    _edit(new_file, "name: Mirabel\naliases: [Bart]\npersonality: A nervous herbalist.\n")
    change = await _next(watcher)
    assert change.kind == "invalid" and "already a name or alias of Bartok" in str(change.issues[0])
    assert change.issues[0].line == 2
    assert campaign.npcs["Mirabel"].aliases == []

    new_file.unlink()
    change = await _next(watcher)
    assert (change.kind, change.name) == ("removed", "Mirabel")
    assert "Mirabel" not in campaign.npcs

    watcher.close()
    assert [c async for c in watcher] == []


async def test_a_file_broken_at_start_is_added_once_fixed(campaign_copy: Path) -> None:
    broken = campaign_copy / "npcs" / "zed.yaml"
    campaign = load_campaign(campaign_copy)
    _edit(broken, "name: Zed\n")  # missing personality; present when the watcher starts
    watcher = CampaignWatcher(campaign, interval_s=0.02)
    assert await watcher.poll_once() == []
    _edit(broken, "name: Zed\nvoice: {speed: 9}\n")
    change = await _next(watcher)
    assert change.kind == "invalid" and change.npc is None and change.name is None
    assert len(change.issues) == 2
    _edit(broken, "name: Zed\npersonality: Quiet.\n")
    change = await _next(watcher)
    assert (change.kind, change.name) == ("added", "Zed")
    watcher.close()


async def test_untouched_files_produce_nothing(campaign_copy: Path) -> None:
    watcher = CampaignWatcher(load_campaign(campaign_copy), interval_s=0.01)
    for _ in range(5):
        assert await watcher.poll_once() == []
