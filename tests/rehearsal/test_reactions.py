"""Reactions on scripted timelines: real lanes, mixer, barge-in, address detection and memory;
scripted recognition, voices and engine (our own protocols). The campaign is a copy of the
example with ``reactions: mentioned`` in its campaign.yaml (or the example as it is: off)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, Table

from bot.table.session.events import BargedIn, NpcSpoke, TurnQueued
from campaigns.basics import Tier
from npcs.campaign import Campaign, load_campaign

VESSA = "Captain Vessa"


@pytest.fixture
def campaign(tmp_path: Path) -> Campaign:
    """The example campaign with reactions on (``reactions: mentioned``)."""
    folder = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, folder)
    meta = folder / "campaign.yaml"
    meta.write_text(meta.read_text().replace("reactions: off", "reactions: mentioned"))
    return load_campaign(folder)


def spoken(table: Table) -> list[NpcSpoke]:
    return table.driver.of_type(NpcSpoke)


def requests_of(table: Table, npc: str) -> list[object]:
    return [r for r in table.engine.requests if r.npc.name == npc]


async def test_an_npc_named_in_an_answer_reacts_once_after_it(table: Table) -> None:
    table.engine.replies["Bartok"] = ["Vessa keeps the docks quiet.", "Ask her yourself."]
    # Her reaction names Bartok back: no chain, and only two of her sentences are said.
    table.engine.replies[VESSA] = ["Ha!", "Bartok flatters me.", "The docks are never quiet."]
    driver = table.driver
    shown: list[object] = []
    table.session.watchers.append(shown.append)  # what the DM's console sees
    driver.say("Arin", "Bartok, who keeps the docks safe?")
    await driver.run_until(lambda: len(spoken(table)) == 2)
    for _ in range(100):  # two seconds more: nothing else follows
        await driver.tick()
    answer, reaction = (event.trace for event in spoken(table))
    assert (answer.npc, reaction.npc) == ("Bartok", VESSA)
    assert reaction.reaction_to == "Bartok" and reaction.speaker == "Arin"
    assert reaction.spoken == "Ha! Bartok flatters me." and not reaction.interrupted
    assert reaction.address_reason == "named in Bartok's answer ('vessa')"
    queued = [e.trace for e in shown if isinstance(e, TurnQueued)]
    assert [(t.npc, t.reaction_to) for t in queued] == [("Bartok", None), (VESSA, "Bartok")]
    (request,) = requests_of(table, VESSA)
    assert request.reacting_to == "Bartok" and request.tier is Tier.FAST  # type: ignore[attr-defined]
    assert request.text == "Vessa keeps the docks quiet. Ask her yourself."  # type: ignore[attr-defined]
    assert len(requests_of(table, "Bartok")) == 1  # named in the reaction, never asked
    # Heard one after the other, Bartok first; her line is in the scene for the next prompt.
    last_bartok = max(i for i, name in enumerate(driver.audible) if name == "Bartok")
    assert driver.audible.index(VESSA) > last_bartok
    assert [line.npc for line in table.session.scene][-2:] == ["Bartok", VESSA]
    await table.session.recorder.flush()
    rows = await table.session.memory.search_sessions(
        "flatters", session_id=table.session.recorder.session_id
    )
    assert [r["text"] for r in rows] == ["Ha! Bartok flatters me."]


async def test_a_reaction_keeps_the_dms_private_direction(table: Table) -> None:
    table.session.controls.direct(VESSA, "Hide that you saw the thief tonight.", 1)
    table.engine.replies["Bartok"] = ["Vessa saw everything."]
    table.driver.say("Arin", "Bartok, who saw the thief?")
    await table.driver.run_until(lambda: len(spoken(table)) == 2)
    (request,) = requests_of(table, VESSA)
    assert request.direction == "Hide that you saw the thief tonight."  # type: ignore[attr-defined]
    assert not table.session.seats.has_direction(VESSA)  # the reaction was its one turn


async def test_one_reaction_per_player_turn_even_when_two_answers_name_npcs(
    table: Table,
) -> None:
    table.engine.replies["Bartok"] = ["Talk to Vessa."]
    table.engine.replies["Greymantle"] = ["Whisper knows more than I do."]
    table.driver.say("Arin", "Bartok, Greymantle, who knows about the mill?")
    await table.driver.run_until(lambda: len(spoken(table)) == 3)
    for _ in range(100):
        await table.driver.tick()
    assert [e.trace.npc for e in spoken(table)] == ["Bartok", "Greymantle", VESSA]
    assert requests_of(table, "Whisper") == []
    # The next player turn may get its own reaction.
    table.driver.say("Arin", "Greymantle, and who else?")
    await table.driver.run_until(lambda: len(spoken(table)) == 5)
    assert [e.trace.npc for e in spoken(table)][3:] == ["Greymantle", "Whisper"]
    assert spoken(table)[4].trace.reaction_to == "Greymantle"


async def test_a_player_barging_in_cuts_the_reaction_like_any_npc(table: Table) -> None:
    table.engine.replies["Bartok"] = ["Vessa was here."]
    long = "I was here on the Watch's business and I will be back tomorrow night."
    table.engine.replies[VESSA] = [long]
    driver = table.driver
    driver.say("Arin", "Bartok, who was here?")
    await driver.run_until(lambda: driver.audible[-1:] == [VESSA])
    for _ in range(15):  # she talks for 300 ms first
        await driver.tick()
    driver.say("Tobble", "Hold on, who is at the door?", seconds=1.2)
    await driver.run_until(lambda: len(spoken(table)) == 2)
    (barge,) = driver.of_type(BargedIn)
    assert (barge.speaker, barge.npc) == ("Tobble", VESSA)
    reaction = spoken(table)[1].trace
    assert reaction.reaction_to == "Bartok" and reaction.interrupted
    assert reaction.spoken and long.startswith(reaction.spoken) and reaction.spoken != long
    assert reaction.dropped is None  # heard, then cut: a barge-in, not a drop


async def test_a_player_who_starts_talking_before_the_reaction_drops_it(table: Table) -> None:
    """The reaction is thinking while Bartok speaks; Tobble starts talking over Bartok (and
    cuts him): Vessa never says a word."""
    table.engine.replies["Bartok"] = ["Vessa was here an hour ago, asking about the cellar."]
    driver = table.driver
    driver.say("Arin", "Bartok, who was here?")
    await driver.run_until(lambda: len(requests_of(table, VESSA)) == 1)
    driver.say("Tobble", "Wait, the door!", seconds=1.0)
    await driver.run_until(lambda: len(spoken(table)) == 2)
    for _ in range(100):
        await driver.tick()
    reaction = next(e.trace for e in spoken(table) if e.trace.npc == VESSA)
    assert reaction.dropped == "Tobble started speaking" and not reaction.spoken
    assert VESSA not in driver.audible
    assert all(line.npc != VESSA for line in table.session.scene)


async def test_a_dropped_reaction_gives_the_directions_turn_back(table: Table) -> None:
    """Vessa's reaction took her one-turn direction and was dropped unheard: the direction
    still waits for her next answer, which gets it."""
    table.session.controls.direct(VESSA, "Hide that you saw the thief tonight.", 1)
    table.engine.replies["Bartok"] = ["Vessa was here an hour ago, asking about the cellar."]
    driver = table.driver
    driver.say("Arin", "Bartok, who was here?")
    await driver.run_until(lambda: len(requests_of(table, VESSA)) == 1)
    assert not table.session.seats.has_direction(VESSA)  # taken by the reaction
    driver.say("Tobble", "Wait, the door!", seconds=1.0)
    await driver.run_until(lambda: len(spoken(table)) == 2)
    reaction = next(e.trace for e in spoken(table) if e.trace.npc == VESSA)
    assert reaction.dropped == "Tobble started speaking"
    assert table.session.seats.seat(VESSA).direction.turns_left == 1
    table.engine.replies[VESSA] = ["I saw nothing."]
    driver.say("Arin", "Captain Vessa, did you see the thief?")
    await driver.run_until(lambda: len(requests_of(table, VESSA)) == 2)
    assert requests_of(table, VESSA)[1].direction == "Hide that you saw the thief tonight."  # type: ignore[attr-defined]
    assert not table.session.seats.has_direction(VESSA)


async def test_a_reaction_waits_for_the_floor_and_is_dropped_if_a_player_starts(
    table: Table,
) -> None:
    """Bartok has finished; Vessa's reaction still thinks (the model holds its first
    sentence) when Arin starts talking: it is dropped, never voiced over her."""
    table.engine.replies["Bartok"] = ["Vessa was here."]
    driver = table.driver
    driver.say("Arin", "Bartok, who was here?")
    # Her request has just begun: from now on the model holds its first sentence back.
    await driver.run_until(lambda: len(requests_of(table, VESSA)) == 1)
    table.engine.think = asyncio.Event()
    await driver.run_until(lambda: len(spoken(table)) == 1)  # Bartok is done
    driver.say("Tobble", "Nice weather today.", seconds=0.8)  # table talk: nobody answers
    await driver.run_until(lambda: len(spoken(table)) == 2)
    reaction = spoken(table)[1].trace
    assert reaction.npc == VESSA and reaction.dropped == "Tobble started speaking"
    assert VESSA in table.engine.cancelled  # it was still thinking
    table.engine.think.set()
    for _ in range(100):
        await driver.tick()
    assert VESSA not in driver.audible


async def test_the_dm_stopping_the_answer_drops_its_reaction(table: Table) -> None:
    table.engine.replies["Bartok"] = ["Vessa was here, and she asked about the cellar door."]
    driver = table.driver
    driver.say("Arin", "Bartok, who was here?")
    await driver.run_until(lambda: len(requests_of(table, VESSA)) == 1)
    await driver.run_until(lambda: table.session.mixer.npc_speaking)
    table.session.controls.stop_speaking("Bartok")
    await driver.run_until(lambda: len(spoken(table)) == 2)
    for _ in range(50):
        await driver.tick()
    reaction = next(e.trace for e in spoken(table) if e.trace.npc == VESSA)
    assert reaction.dropped == "the DM stopped the NPCs"
    assert VESSA not in driver.audible


async def test_dm_puppeting_and_muted_npcs_get_no_reaction(table: Table) -> None:
    table.session.controls.say("Bartok", "Vessa, your table is ready.")
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    table.session.controls.mute(VESSA)
    table.engine.replies["Bartok"] = ["Vessa was here."]
    table.driver.say("Arin", "Bartok, who was here?")
    await table.driver.run_until(lambda: len(spoken(table)) == 2)
    for _ in range(100):
        await table.driver.tick()
    assert requests_of(table, VESSA) == []


class TestOff:
    """The example campaign as shipped: reactions are off."""

    @pytest.fixture
    def campaign(self) -> Campaign:
        return load_campaign(EXAMPLE)

    async def test_no_reaction_when_the_campaign_leaves_them_off(self, table: Table) -> None:
        assert table.session.campaign.meta.reactions == "off"
        table.engine.replies["Bartok"] = ["Vessa keeps the docks quiet."]
        table.driver.say("Arin", "Bartok, who keeps the docks safe?")
        await table.driver.run_until(lambda: len(spoken(table)) == 1)
        for _ in range(100):
            await table.driver.tick()
        assert len(spoken(table)) == 1 and requests_of(table, VESSA) == []
