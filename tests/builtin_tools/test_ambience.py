"""Ambience tools driving the real mixer ambience player from the speech stack."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bot.audio.speech.ambience import AmbiencePlayer
from tools.builtin.ambience import create_server
from tools.spec import ToolContext, ToolError

from .conftest import result_text, stdio_session


async def test_play_list_stop_with_real_player(campaign_dir: Path) -> None:
    player = AmbiencePlayer(volume=0.5, duck=0.5)
    server = create_server(
        ToolContext(campaign_dir=campaign_dir, ambience=player), random.Random(1)
    )
    tools = {t.name: t for t in server.tools}
    moods = await tools["list_moods"].handler()
    assert moods["moods"] == [{"mood": "battle", "tracks": 1}, {"mood": "tavern", "tracks": 1}]
    played = await tools["play_track"].handler(mood="Tavern")
    assert played == {"mood": "tavern", "track": "lute.wav", "playing": True}
    assert player.now_playing is not None and player.now_playing[1] == "tavern"
    block = player.next_block(960, ducked=False)
    assert block is not None and block.any()  # the track really renders into the mix
    assert (await tools["stop_music"].handler()) == {"playing": False}
    assert player.now_playing is None and player.next_block(960, ducked=False) is None


async def test_errors_are_clear(campaign_dir: Path) -> None:
    player = AmbiencePlayer()
    tools = {
        t.name: t
        for t in create_server(ToolContext(campaign_dir=campaign_dir, ambience=player)).tools
    }
    with pytest.raises(ToolError, match="available: battle, tavern"):
        await tools["play_track"].handler(mood="spooky")
    with pytest.raises(ToolError, match="not a mood name"):
        await tools["play_track"].handler(mood="../tavern")
    (campaign_dir / "ambience" / "broken").mkdir()
    (campaign_dir / "ambience" / "broken" / "bad.wav").write_bytes(b"not audio at all")
    with pytest.raises(ToolError, match=r"cannot play bad\.wav"):
        await tools["play_track"].handler(mood="broken")
    detached = {t.name: t for t in create_server(ToolContext(campaign_dir=campaign_dir)).tools}
    with pytest.raises(ToolError, match="no audio output attached"):
        await detached["play_track"].handler(mood="tavern")
    with pytest.raises(ToolError, match="no audio output attached"):
        await detached["stop_music"].handler()


async def test_over_stdio(campaign_dir: Path) -> None:
    server = ("tools.builtin", "ambience", "--campaign", str(campaign_dir))
    async with stdio_session(*server) as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        assert listing["list_moods"].meta["io.glyphoxa/latency"]["max_duration_ms"] <= 500
        moods = await session.call_tool("list_moods", {})
        assert [m["mood"] for m in json.loads(result_text(moods))["moods"]] == ["battle", "tavern"]
        play = await session.call_tool("play_track", {"mood": "tavern"})
        assert play.is_error and "no audio output attached" in result_text(play)
        bad = await session.call_tool("play_track", {"mood": 3})
        assert bad.is_error and "mood" in result_text(bad)
