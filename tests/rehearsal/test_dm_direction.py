"""The DM's private direction to an NPC: it joins that NPC's next N prompts and nothing else.

Never the scene, the transcript (campaign memory) or another NPC's prompt; a DM ``say`` line
does not use up a turn; a new direction replaces the old; an empty one clears it. The live
events a console reads arrive too: partials, speaking, a turn queued.
"""

from __future__ import annotations

import pytest
from conftest import Table

from bot.table.session.events import (
    DmAction,
    NpcSpoke,
    PlayerPartial,
    PlayerSpoke,
    Routed,
    SpeakingChanged,
    TurnQueued,
)
from bot.table.session.seats import Direction, TableSeats
from campaigns.basics import GlyphoxaError
from npcs.context import build_messages, direction_note

DIRECTION = "Be evasive about the cellar; hint that the Watch is watching."


def _spoken(table: Table) -> list[NpcSpoke]:
    return table.driver.of_type(NpcSpoke)


async def test_a_direction_lasts_its_turns_and_stays_out_of_transcripts(table: Table) -> None:
    session, driver = table.session, table.driver
    session.controls.direct("bartok", DIRECTION, turns=2)
    assert session.status().npcs["Bartok"].direction == "2 turns"
    for n, line in enumerate(
        [
            "Bartok, what is on tap?",
            "Greymantle, hello.",
            "Bartok, and the cellar?",
            "Bartok, one more?",
        ],
        start=1,
    ):
        driver.say("Arin", line)
        await driver.run_until(lambda n=n: len(_spoken(table)) == n)
    directions = [(r.npc.name, r.direction) for r in table.engine.requests]
    assert directions == [
        ("Bartok", DIRECTION), ("Greymantle", None), ("Bartok", DIRECTION), ("Bartok", None)
    ]  # fmt: skip
    assert not session.seats.has_direction("Bartok")
    await session.recorder.flush()
    memory = session.memory
    lines = await memory.session_lines(session.recorder.session_id)
    assert lines and all("evasive" not in line["text"] for line in lines)
    assert all("evasive" not in line.text for line in session.scene)


async def test_say_lines_keep_the_direction_and_empty_text_clears_it(table: Table) -> None:
    session, driver = table.session, table.driver
    session.controls.direct("Bartok", "Mention the storm.", turns=1)
    session.controls.say("Bartok", "Coming right up!")
    await driver.run_until(lambda: len(_spoken(table)) == 1)
    assert session.seats.seat("Bartok").direction.turns_left == 1
    session.controls.direct("Bartok", "Mention the fog instead.", turns=3)
    assert session.seats.seat("Bartok").direction.text == "Mention the fog instead."
    session.controls.direct("Bartok", "  ")
    assert not session.seats.has_direction("Bartok")
    with pytest.raises(GlyphoxaError, match="1 to 20 turns"):
        session.controls.direct("Bartok", "x", turns=0)
    with pytest.raises(GlyphoxaError, match="no NPC named"):
        session.controls.direct("Nobody", "x")


def test_the_direction_sits_in_the_turn_message_not_the_system_prompt(campaign) -> None:  # type: ignore[no-untyped-def]
    npc = campaign.npcs["Bartok"]
    plain = build_messages(npc, "Arin", "Hello.")
    directed = build_messages(npc, "Arin", "Hello.", direction=DIRECTION)
    assert plain[0] == directed[0]  # the cached prefix stays the same
    assert direction_note(DIRECTION) in directed[1]["content"]
    assert directed[1]["content"].endswith("Arin says to you: Hello.")


async def test_watchers_see_live_events(table: Table) -> None:
    seen: list[object] = []
    table.session.watchers.append(seen.append)
    table.driver.say("Arin", "Bartok, what is on tap tonight?")
    await table.driver.run_until(lambda: len(_spoken(table)) == 1)
    kinds = {type(event) for event in seen}
    assert {SpeakingChanged, TurnQueued, NpcSpoke} <= kinds
    queued = next(e for e in seen if isinstance(e, TurnQueued))
    assert queued.trace.npc == "Bartok" and queued.trace.address_reason
    assert all(isinstance(e.text, str) for e in seen if isinstance(e, PlayerPartial))


async def _routed(table: Table, speaker: str, text: str) -> Routed:
    before = len(table.driver.of_type(Routed))
    table.driver.say(speaker, text)
    await table.driver.run_until(lambda: len(table.driver.of_type(Routed)) > before)
    return table.driver.of_type(Routed)[before]


async def test_the_dms_voice_between_us_directs_privately_until_cleared(table: Table) -> None:
    """ "<NPC>, between us: ..." from the DM's lane: a direction until "that's all"; its words
    reach no transcript, partial, scene, memory or log line. A player's same words are a turn."""
    session, driver = table.session, table.driver
    seen: list[object] = []
    session.watchers.append(seen.append)
    secret = "You saw the thief at the mill, deny it."
    command = await _routed(table, "DM", f"Bartok, between us: {secret}")
    assert command.npcs == () and command.text == "(private)"
    assert command.reason == "DM voice command: private direction for Bartok"
    assert session.status().npcs["Bartok"].direction == "until cleared"
    for n, (speaker, line) in enumerate(
        [
            ("Arin", "Bartok, what is on tap?"),
            ("Tobble", "Greymantle, hello."),
            ("Arin", "Bartok, and the mill?"),
        ],
        start=1,
    ):
        driver.say(speaker, line)
        await driver.run_until(lambda n=n: len(_spoken(table)) == n)
    cleared = await _routed(table, "DM", "Bartok, between us: that's all.")
    assert cleared.reason == "DM voice command: clear the private direction for Bartok"
    assert not session.seats.has_direction("Bartok")
    driver.say("Arin", "Bartok, one more?")
    await driver.run_until(lambda: len(_spoken(table)) == 4)
    directions = [(r.npc.name, r.direction) for r in table.engine.requests]
    assert directions == [
        ("Bartok", secret), ("Greymantle", None), ("Bartok", secret), ("Bartok", None)
    ]  # fmt: skip

    # Said with a pause after "between us": the DM's next words are the direction.
    await _routed(table, "DM", "Greymantle, between us.")
    pause = await _routed(table, "DM", "Be gruff with Tobble tonight.")
    assert pause.text == "(private)"
    assert session.seats.seat("Greymantle").direction.turns_left is None

    # A player's "between us" is an ordinary line to the NPC, and directs nothing.
    heard = await _routed(table, "Arin", "Bartok, between us: give me a discount.")
    assert heard.npcs == ("Bartok",) and not session.seats.has_direction("Bartok")
    await driver.run_until(lambda: len(_spoken(table)) == 5)

    await session.recorder.flush()
    lines = await session.memory.session_lines(session.recorder.session_id)
    written = [line["text"] for line in lines] + [line.text for line in session.scene]
    written += [e.text for e in driver.of_type(PlayerSpoke)] + [e.text for e in seen if
                isinstance(e, PlayerPartial | Routed)]  # fmt: skip
    written += [f"{e.detail} {e.heard}" for e in driver.of_type(DmAction)]
    assert any("discount" in text for text in written)  # the player's line is in them
    for text in written:
        assert "thief" not in text.lower() and "gruff" not in text.lower(), text
    details = [e.detail for e in driver.of_type(DmAction)]
    assert details == [
        "Bartok: a private direction by voice, until cleared",
        "Bartok: direction cleared by voice",
        "Greymantle: a private direction by voice, until cleared",
    ]


def test_a_direction_given_back_never_undoes_the_dms_own_change() -> None:
    """A dropped turn gives its direction's turn back, unless the DM cleared or replaced the
    direction since; one that lasts until cleared has nothing to give back."""
    seats = TableSeats()
    bartok = seats.seat("Bartok")
    bartok.direction = Direction("Be evasive.", 2)
    assert seats.brief("Bartok", take=True) == "Be evasive."
    seats.give_back("Bartok")
    assert bartok.direction.turns_left == 2
    bartok.direction = Direction("Be evasive.", 1)
    seats.brief("Bartok", take=True)  # its last turn: gone until given back
    assert bartok.direction is None
    seats.give_back("Bartok")
    assert bartok.direction is not None and bartok.direction.turns_left == 1
    assert seats.brief("Bartok", take=False) == "Be evasive."  # a look ahead takes nothing
    assert bartok.direction.turns_left == 1
    seats.brief("Bartok", take=True)
    bartok.direction = Direction("Mention the storm.", 1)  # the DM's new one
    seats.give_back("Bartok")
    assert bartok.direction == Direction("Mention the storm.", 1)
    bartok.direction = Direction("Be kind.", 3)
    seats.brief("Bartok", take=True)
    bartok.direction = None  # cleared by the DM
    seats.give_back("Bartok")
    assert bartok.direction is None
    bartok.direction = Direction("Stay calm.", None)
    seats.brief("Bartok", take=True)
    seats.give_back("Bartok")
    assert bartok.direction == Direction("Stay calm.", None)
    seats.give_back("Greymantle")  # took nothing: nothing happens
    assert not seats.has_direction("Greymantle")
