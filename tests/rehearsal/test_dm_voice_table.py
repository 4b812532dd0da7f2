"""DM voice commands on scripted table timelines: real lanes, mixer, barge-in, addressing, tier
selector and memory; scripted recognition, voices and engine. "DM" is the table's DM lane."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from conftest import Table, _table
from table_script import TableDriver

from bot.settings.config import GlyphoxaConfig
from bot.table.session.events import DmAction, NpcSpoke, Routed
from campaigns.basics import Tier
from campaigns.memory import MemoryStore
from npcs.campaign import Campaign
from npcs.context import build_messages


def spoken(table: Table) -> list[NpcSpoke]:
    return table.driver.of_type(NpcSpoke)


def routed(table: Table) -> list[Routed]:
    return table.driver.of_type(Routed)


async def line(driver: TableDriver, speaker: str, text: str) -> Routed:
    """``speaker`` says ``text``; returns its routing once the final transcript is in."""
    before = len(driver.of_type(Routed))
    driver.say(speaker, text)
    await driver.run_until(lambda: len(driver.of_type(Routed)) > before)
    return driver.of_type(Routed)[before]


async def answered(table: Table, speaker: str, text: str) -> NpcSpoke:
    before = len(spoken(table))
    await line(table.driver, speaker, text)
    await table.driver.run_until(lambda: len(spoken(table)) > before)
    return spoken(table)[before]


def chimed_since(driver: TableDriver, tick: int) -> bool:
    """A loud frame while no NPC was audible: the acknowledgement chime."""
    return any(
        peak > 1000 and who is None
        for peak, who in zip(driver.peaks[tick:], driver.audible[tick:], strict=True)
    )


async def test_a_dm_tier_command_takes_effect_for_the_next_turn_and_a_players_does_not(
    table: Table,
) -> None:
    driver = table.driver
    await answered(table, "Tobble", "Greymantle, good evening.")  # first turn: STANDARD
    turn = await answered(table, "Tobble", "Greymantle, nice weather.")
    assert turn.trace.tier == "fast"
    # A player's identical words: an ordinary turn (its own tier phrase), no override.
    turn = await answered(table, "Arin", "Grey Mantel, take your time.")
    assert (turn.trace.npc, turn.trace.tier) == ("Greymantle", "deep")
    assert turn.trace.tier_reason == "DEEP phrase 'take your time'"
    assert driver.of_type(DmAction) == []
    turn = await answered(table, "Tobble", "Greymantle, and the rain?")
    assert turn.trace.tier == "fast" and table.session.status().npcs["Greymantle"].override is None
    # The DM's words: a command, acknowledged with a chime, answered by nobody.
    tick = len(driver.peaks)
    turns_before = len(table.engine.requests)
    command = await line(driver, "DM", "Grey Mantel, take your time.")
    assert command.npcs == () and command.reason == "DM voice command: tier deep for Greymantle"
    (action,) = driver.of_type(DmAction)
    assert (action.action, action.detail) == ("tier", "deep for Greymantle for 300s")
    assert action.heard == f"DM: {command.text}"  # as the lane heard it (vocabulary-spelt)
    for _ in range(15):
        await driver.tick()
    assert chimed_since(driver, tick)
    assert len(table.engine.requests) == turns_before
    # The next turn with Greymantle is DEEP by the override; Bartok is untouched.
    turn = await answered(table, "Tobble", "Greymantle, and the rain?")
    assert table.engine.requests[-1].tier is Tier.DEEP
    assert turn.trace.tier_reason.startswith("DM override deep for Greymantle")
    status = table.session.status().npcs["Greymantle"]
    assert status.last_tier == "deep" and (status.override or "").startswith("DM override deep")
    turn = await answered(table, "Arin", "Bartok, another ale.")
    assert turn.trace.tier in {"fast", "standard"} and not turn.trace.tier_reason.startswith("DM")
    # The transcript in campaign memory keeps the DM's words.
    await table.session.recorder.flush()
    sid = table.session.recorder.session_id
    rows = await table.session.memory.search_sessions("time", session_id=sid)
    assert ("DM", command.text) in [(r["speaker"], r["text"]) for r in rows]


async def test_everyone_quick_answers_and_back_to_normal(table: Table) -> None:
    driver = table.driver
    await answered(table, "Tobble", "Greymantle, good evening.")
    await line(driver, "DM", "Everyone, quick answers.")
    turn = await answered(table, "Tobble", "Greymantle, tell me everything about the war.")
    assert turn.trace.tier == "fast" and "for all NPCs" in turn.trace.tier_reason
    await line(driver, "DM", "everyone back to normal")
    turn = await answered(table, "Tobble", "Greymantle, tell me everything about the war.")
    assert turn.trace.tier == "deep" and turn.trace.tier_reason.startswith("DEEP phrase")
    assert [(a.action, a.detail) for a in driver.of_type(DmAction)] == [
        ("tier", "fast for all NPCs for 300s"),
        ("tier", "auto for all NPCs"),
    ]


async def test_be_quiet_and_you_may_speak_only_from_the_dm(table: Table) -> None:
    driver = table.driver
    turn = await answered(table, "Arin", "Bartok, be quiet.")  # a player: Bartok answers
    assert turn.trace.npc == "Bartok" and not table.session.controls.is_muted("Bartok")
    await line(driver, "DM", "Bartok, be quiet.")
    assert table.session.controls.is_muted("Bartok")
    assert (await line(driver, "Arin", "Bartok, another ale.")).reason == "muted"
    await line(driver, "DM", "Bartok, you may speak.")
    assert not table.session.controls.is_muted("Bartok")
    turn = await answered(table, "Arin", "Bartok, another ale.")
    assert turn.trace.npc == "Bartok"
    assert [a.action for a in driver.of_type(DmAction)] == ["mute", "unmute"]


async def _two_npcs_talking(table: Table) -> None:
    """Greymantle speaks a long answer (its LLM still writing), Bartok waits his turn."""
    table.engine.hold = asyncio.Event()
    long = "It was a dark and stormy night on the docks of Emberford, long ago."
    table.engine.replies["Greymantle"] = [long, long]
    await line(table.driver, "Arin", "Greymantle and Bartok, tell me a story.")
    await table.driver.run_until(lambda: table.session.mixer.npc_speaking)
    for _ in range(10):
        await table.driver.tick()


async def test_everyone_stop_from_the_dm_cuts_every_npc(table: Table) -> None:
    await _two_npcs_talking(table)
    # The DM's voice already barges in on Greymantle; the command then cuts everyone, Bartok
    # too (speaking by now, or still waiting), and nothing more is heard.
    await line(table.driver, "DM", "Everyone, stop!")
    stopped_at = len(table.driver.audible)
    await table.driver.run_until(lambda: not table.session.busy)
    table.engine.hold.set()  # type: ignore[union-attr]
    for _ in range(50):
        await table.driver.tick()
    assert set(table.driver.audible[stopped_at + 1 :]) == {None}
    assert all(turn.trace.interrupted for turn in spoken(table))
    assert [turn.trace.npc for turn in spoken(table)][:1] == ["Greymantle"]
    assert [(a.action, a.detail) for a in table.driver.of_type(DmAction)] == [("stop", "all")]


async def test_a_player_saying_everyone_stop_only_barges_in_on_the_speaker(table: Table) -> None:
    await _two_npcs_talking(table)
    await line(table.driver, "Tobble", "Everyone, stop!")
    table.engine.hold.set()  # type: ignore[union-attr]
    await table.driver.run_until(lambda: len(spoken(table)) == 2)  # Bartok still answers
    first, second = (turn.trace for turn in spoken(table))
    assert (first.npc, first.interrupted) == ("Greymantle", True)  # the ordinary barge-in
    assert (second.npc, second.interrupted) == ("Bartok", False)
    assert table.driver.of_type(DmAction) == []


@pytest.fixture
async def word_ack_table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Table]:
    config = config.model_copy(
        update={"dm_voice": config.dm_voice.model_copy(update={"ack": "word"})}
    )
    async for made in _table(config, campaign, memory, speculate=False):
        yield made


async def test_word_acknowledgement_is_the_npc_saying_one_word(word_ack_table: Table) -> None:
    table = word_ack_table
    await line(table.driver, "DM", "Bartok, quick answers please.")
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    trace = spoken(table)[0].trace
    assert (trace.npc, trace.spoken) == ("Bartok", "Understood.")
    assert table.engine.requests == []  # no LLM for the acknowledgement


@pytest.fixture
async def voice_off_table(
    config: GlyphoxaConfig, campaign: Campaign, memory: MemoryStore
) -> AsyncIterator[Table]:
    config = config.model_copy(
        update={"dm_voice": config.dm_voice.model_copy(update={"enabled": False})}
    )
    async for made in _table(config, campaign, memory, speculate=False):
        yield made


async def test_voice_commands_can_be_turned_off(voice_off_table: Table) -> None:
    table = voice_off_table
    turn = await answered(table, "DM", "Bartok, be quiet.")
    assert turn.trace.npc == "Bartok" and not table.session.controls.is_muted("Bartok")


MOOD = "Your mood right now: grumpy; let it color what you say."


async def test_a_mood_set_by_voice_joins_every_answer_of_that_npc_until_cleared(
    table: Table, campaign: Campaign
) -> None:
    """ "Bartok, your mood is grumpy" from the DM's lane: Bartok's seat, its status and each of
    its prompts carry it (with a private direction, before it); Greymantle's do not; a player's
    identical words are a line to Bartok; "drop the mood" clears it."""
    session = table.session
    command = await line(table.driver, "DM", "Bartok, your mood is grumpy.")
    assert command.npcs == () and command.reason == "DM voice command: mood grumpy for Bartok"
    assert session.seats.seat("Bartok").mood == "grumpy"
    status = session.status().npcs
    assert status["Bartok"].mood == "grumpy" and status["Greymantle"].mood is None
    assert "mood: grumpy" in [badge.text for badge in status["Bartok"].badges]
    session.controls.direct("Bartok", "Mention the storm.", turns=1)
    for n, text in enumerate(
        ["Bartok, an ale please.", "Bartok, and another.", "Greymantle, hello."], start=1
    ):
        table.driver.say("Arin", text)
        await table.driver.run_until(lambda n=n: len(table.engine.requests) == n)
    briefs = [(r.npc.name, r.direction) for r in table.engine.requests]
    assert briefs == [
        ("Bartok", f"{MOOD} Mention the storm."), ("Bartok", MOOD), ("Greymantle", None)
    ]  # fmt: skip
    told = build_messages(campaign.npcs["Bartok"], "Arin", "Hi.", direction=MOOD)
    assert MOOD in told[1]["content"] and "grumpy" not in told[0]["content"]  # the turn's part

    player = await line(table.driver, "Arin", "Bartok, your mood is cheerful.")
    assert player.npcs == ("Bartok",)  # a player's words steer nothing
    assert session.seats.seat("Bartok").mood == "grumpy"
    cleared = await line(table.driver, "DM", "Bartok, drop the mood.")
    assert cleared.reason == "DM voice command: mood cleared for Bartok"
    assert (
        session.seats.seat("Bartok").mood is None and session.status().npcs["Bartok"].badges == ()
    )
    moods = [
        (e.detail, bool(e.heard)) for e in table.driver.of_type(DmAction) if e.action == "mood"
    ]
    assert moods == [("Bartok: grumpy", True), ("Bartok: cleared", True)]


async def test_a_speculative_answer_is_told_the_mood_and_adopted(speculating_table: Table) -> None:
    """The mood holds for every answer, so an answer started on a judged pause is told it too,
    and the final adopts that answer (a one-turn direction would make it wait for the final)."""
    table = speculating_table
    table.session.controls.set_mood("Bartok", "grumpy")
    table.engine.replies["Bartok"] = ["What now?"]
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    assert spoken(table)[0].trace.speculative
    assert [r.direction for r in table.engine.requests] == [MOOD]  # one run, told the mood
