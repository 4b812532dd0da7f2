"""Characters at a running table: real lanes, addressing, prompt builder and memory store
(SQLite), scripted recognition, voices and engine (our own protocols).

A bound player is their character in the NPC's prompt, the transcript and memory; an unbound
one goes by their display name; a binding made at the table is there at the next session."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from table_script import EnergyVad, ScriptedEngine, TableDriver, ToneStt, ToneTts

from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.events import NpcSpoke, PlayerSpoke, Routed
from bot.table.session.session import TableSession
from bot.telemetry.metrics import Metrics
from campaigns.basics import GlyphoxaError
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign
from npcs.context import build_messages

DUSK, TOBBLE = 1, 2  # the players' ids (Discord user ids at a real table)


class Night:
    def __init__(self, session: TableSession, driver: TableDriver, engine: ScriptedEngine):
        self.session, self.driver, self.engine = session, driver, engine


@contextlib.asynccontextmanager
async def _night(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Night]:
    stt, engine = ToneStt(), ScriptedEngine(replies={})
    session = build_session(
        config=config, campaign=campaign, stt=stt, tts=ToneTts(), engines=lambda npc: engine,
        memory=memory, metrics=Metrics(), vad_factory=EnergyVad, speculate=False,
    )  # fmt: skip
    await session.start()
    try:
        yield Night(session, TableDriver(session, stt, ["dusk_rider", "Tobble"]), engine)
    finally:
        await session.stop()


@pytest.fixture
async def night(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Night]:
    async with _night(config, campaign, memory) as made:
        yield made


async def test_a_bound_player_is_their_character_in_prompt_transcript_and_memory(
    night: Night,
) -> None:
    session, driver, engine = night.session, night.driver, night.engine
    bound = await session.bind_character(DUSK, "Arin Duskwalker", bound_by="dusk_rider")
    assert (bound.character, bound.source) == ("Arin Duskwalker", "table")
    driver.say("dusk_rider", "Bartok, what is on tap tonight?")
    driver.say("Tobble", "")  # Tobble's lane opens on silence (a Discord member in the channel)
    await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
    request = engine.requests[-1]
    assert request.speaker == "Arin Duskwalker"
    prompt = build_messages(request.npc, request.speaker, request.text, scene=request.scene)
    assert "Arin Duskwalker says to you: Bartok, what is on tap tonight?" in prompt[1]["content"]
    assert "dusk_rider" not in str(prompt)
    driver.say("Tobble", "Bartok, and a cider for me.")
    await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 2)
    request = engine.requests[-1]
    assert request.speaker == "Tobble"  # unbound: the display name
    shown = build_messages(request.npc, request.speaker, request.text, scene=request.scene)
    assert 'Arin Duskwalker said: "Bartok, what is on tap tonight?"' in shown[1]["content"]
    assert [e.speaker for e in driver.of_type(PlayerSpoke)] == ["Arin Duskwalker", "Tobble"]
    assert session.status().speakers["Arin Duskwalker"].display_name == "dusk_rider"
    await session.recorder.flush()
    rows = await session.memory.search_sessions("tap", session_id=session.recorder.session_id)
    assert [(r["speaker"], r["npc"]) for r in rows] == [("Arin Duskwalker", None)]


async def test_saying_a_characters_name_to_them_is_table_talk(night: Night) -> None:
    session, driver = night.session, night.driver
    await session.bind_character(DUSK, "Arin Duskwalker")
    driver.say("Tobble", "Bartok, a pint please.")
    await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
    driver.say("Tobble", "Arin, do you want one too?")
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 2)
    routed = driver.of_type(Routed)[-1]
    assert routed.npcs == () and "spoken to Arin Duskwalker" in routed.reason


async def test_binding_is_kept_for_the_next_session_and_can_be_undone(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> None:
    async with _night(config, campaign, memory) as first:
        await first.session.bind_character(DUSK, "Arin", bound_by="Dana")
        with pytest.raises(GlyphoxaError, match="Arin is already played by another player"):
            await first.session.bind_character(TOBBLE, "arin")
        with pytest.raises(GlyphoxaError, match="the NPC Bartok's name"):
            await first.session.bind_character(TOBBLE, "Bartok")
        first.driver.say("dusk_rider", "Bartok, a room for the night.")
        await first.driver.run_until(lambda: len(first.driver.of_type(NpcSpoke)) == 1)
    recap = await memory.recap(1)  # the session's summary, written when it ended
    assert "Arin" in recap and "dusk_rider" not in recap
    async with _night(config, campaign, memory) as second:
        (kept,) = second.session.characters.bindings()
        assert (kept.user_id, kept.character, kept.bound_by) == ("1", "Arin", "Dana")
        second.driver.say("dusk_rider", "Greymantle, hello again.")
        await second.driver.run_until(lambda: len(second.driver.of_type(NpcSpoke)) == 1)
        assert second.engine.requests[-1].speaker == "Arin"
        assert await second.session.unbind_character(DUSK) is None
        assert "dusk_rider" in second.session.status().speakers  # the open lane, renamed
        second.driver.say("dusk_rider", "Greymantle, goodbye.")
        await second.driver.run_until(lambda: len(second.driver.of_type(NpcSpoke)) == 2)
        assert second.engine.requests[-1].speaker == "dusk_rider"
        with pytest.raises(GlyphoxaError, match="no character bound"):
            await second.session.unbind_character(DUSK)
    assert await memory.character_bindings(campaign.name) == []


async def test_campaign_yaml_binds_by_user_id_and_the_table_overrides_it(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> None:
    campaign.meta.characters = {"2": "Tobble the Bold"}  # as loaded from campaign.yaml
    # bound at an earlier session, before the DM gave the name to Tobble in campaign.yaml
    await memory.bind_character(campaign.name, "1", "tobble the bold", bound_by="dusk_rider")
    async with _night(config, campaign, memory) as table:
        assert [(b.user_id, b.source) for b in table.session.characters.bindings()] == [
            ("2", "campaign.yaml")
        ]
        table.driver.say("Tobble", "Bartok, what's the news?")
        await table.driver.run_until(lambda: len(table.driver.of_type(NpcSpoke)) == 1)
        assert table.engine.requests[-1].speaker == "Tobble the Bold"
        with pytest.raises(GlyphoxaError, match=r"set for this player in campaign\.yaml"):
            await table.session.unbind_character(TOBBLE)
        await table.session.bind_character(TOBBLE, "Tobble")
        await table.session.unbind_character(TOBBLE)  # back to the campaign.yaml entry
        assert [b.source for b in table.session.characters.bindings()] == ["campaign.yaml"]
