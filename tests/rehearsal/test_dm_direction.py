"""The DM's private direction to an NPC: it joins that NPC's next N prompts and nothing else.

Never the scene, the transcript (campaign memory) or another NPC's prompt; a DM ``say`` line
does not use up a turn; a new direction replaces the old; an empty one clears it. The live
events a console reads arrive too: partials, speaking, a turn queued.
"""

from __future__ import annotations

import pytest
from conftest import Table

from bot.session.events import NpcSpoke, PlayerPartial, SpeakingChanged, TurnQueued
from campaigns.errors import GlyphoxaError
from npcs.context import build_messages, direction_note

DIRECTION = "Be evasive about the cellar; hint that the Watch is watching."


def _spoken(table: Table) -> list[NpcSpoke]:
    return table.driver.of_type(NpcSpoke)


async def test_a_direction_lasts_its_turns_and_stays_out_of_transcripts(table: Table) -> None:
    session, driver = table.session, table.driver
    session.direct("bartok", DIRECTION, turns=2)
    assert session.status()["npcs"]["Bartok"]["direction_turns"] == 2
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
    assert "Bartok" not in session.directions
    await session.recorder.flush()
    memory = session.memory
    lines = await memory.session_lines(session.recorder.session_id)
    assert lines and all("evasive" not in line["text"] for line in lines)
    assert all("evasive" not in line.text for line in session.scene)


async def test_say_lines_keep_the_direction_and_empty_text_clears_it(table: Table) -> None:
    session, driver = table.session, table.driver
    session.direct("Bartok", "Mention the storm.", turns=1)
    session.say("Bartok", "Coming right up!")
    await driver.run_until(lambda: len(_spoken(table)) == 1)
    assert session.directions["Bartok"].turns_left == 1
    session.direct("Bartok", "Mention the fog instead.", turns=3)
    assert session.directions["Bartok"].text == "Mention the fog instead."
    session.direct("Bartok", "  ")
    assert "Bartok" not in session.directions
    with pytest.raises(GlyphoxaError, match="1 to 20 turns"):
        session.direct("Bartok", "x", turns=0)
    with pytest.raises(GlyphoxaError, match="no NPC named"):
        session.direct("Nobody", "x")


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
