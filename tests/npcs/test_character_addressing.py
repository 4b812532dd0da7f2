"""Players' characters in address detection: a name like any name a player could be called.

"Arin, what do you think?" said by one player to another is table talk (no NPC answers, not
the sole NPC in the scene nor the one the player was talking with), and a character whose name
sounds like an NPC's ("Barton" and Bartok) is never taken for that NPC.
"""

from __future__ import annotations

from npcs.addressing import AddressDetector
from npcs.characters import character_name_problem, discord_id_problem
from npcs.schema import NpcDefinition


def npc(name: str, *aliases: str) -> NpcDefinition:
    return NpcDefinition(name=name, aliases=list(aliases), personality="x")


CAST = [npc("Bartok", "Bart", "the barkeep"), npc("Greymantle", "the sage")]


def test_a_line_spoken_to_a_character_is_table_talk_even_with_one_npc_in_the_scene() -> None:
    plain = AddressDetector(CAST, active=["Bartok"])
    assert plain.detect("Tobble", "Arin, what do you think?", 0.0).npcs == ["Bartok"]
    with_cast = AddressDetector(CAST, active=["Bartok"], characters=["Arin Duskwalker"])
    decision = with_cast.detect("Tobble", "Arin, what do you think?", 0.0)
    assert decision.npcs == []
    assert decision.reason == "spoken to Arin Duskwalker (a player's character)"
    assert decision.mentions == []  # only NPCs are mentions (tiers, DM commands read them)


def test_turning_to_a_player_ends_the_conversation_with_the_npc() -> None:
    detector = AddressDetector(CAST, characters=["Arin"])
    assert detector.detect("Tobble", "Bartok, a pint please.", 0.0).npcs == ["Bartok"]
    assert detector.detect("Tobble", "And some bread.", 2.0).npcs == ["Bartok"]
    assert detector.detect("Tobble", "Arin, are you hungry too?", 4.0).npcs == []
    assert detector.detect("Tobble", "I think we should leave.", 6.0).npcs == []


def test_a_characters_name_is_never_a_misheard_npc_name() -> None:
    line = "Barton, what do you think?"
    assert AddressDetector(CAST).detect("Tobble", line, 0.0).npcs == ["Bartok"]  # fuzzy
    detector = AddressDetector(CAST, characters=["Barton"])
    assert detector.detect("Tobble", line, 0.0).npcs == []
    assert detector.detect("Tobble", "Bartock, a pint!", 1.0).npcs == ["Bartok"]
    detector.set_characters([])  # the binding is gone: the old reading is back
    assert detector.detect("Mira", line, 2.0).npcs == ["Bartok"]


def test_npcs_named_beside_characters_still_answer() -> None:
    detector = AddressDetector(CAST, characters=["Arin"])
    decision = detector.detect("Tobble", "Thanks, Arin. Bartok, another round!", 0.0)
    assert decision.npcs == ["Bartok"]
    assert detector.detect("Tobble", "Arin and Bartok, what do you say?", 1.0).npcs == ["Bartok"]
    # A player never speaks to their own character.
    assert detector.detect("Arin", "I'm Arin, nice to meet you Bartok.", 2.0).npcs == ["Bartok"]


def test_a_renamed_speaker_keeps_their_conversation() -> None:
    detector = AddressDetector(CAST)
    assert detector.detect("dusk_rider", "Greymantle, hello.", 0.0).npcs == ["Greymantle"]
    detector.rename_speaker("dusk_rider", "Arin")
    assert detector.detect("Arin", "What do you know of the mill?", 1.0).npcs == ["Greymantle"]


def test_character_names_are_sayable_and_no_npcs() -> None:
    assert character_name_problem("Arin", CAST) is None
    assert "the NPC Bartok's name" in (character_name_problem("bartok", CAST) or "")
    assert "alias 'the sage'" in (character_name_problem("Sage", CAST) or "")
    assert "no letters" in (character_name_problem("!!", CAST) or "")
    assert "longer than 64" in (character_name_problem("A" * 65, CAST) or "")
    assert discord_id_problem("123456789012345678") is None
    assert "Copy User ID" in (discord_id_problem("dusk_rider") or "")
