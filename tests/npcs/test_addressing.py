"""Address detection: realistic table talk, STT misspellings, continuation, puppeting."""

from __future__ import annotations

import pytest

from npcs.addressing import AddressDetector, phonetic_key
from npcs.schema import NpcDefinition


def npc(name: str, *aliases: str, address_only: bool = False) -> NpcDefinition:
    return NpcDefinition(
        name=name, aliases=list(aliases), personality="x", address_only=address_only
    )


CAST = [
    npc("Bartok", "Bart", "barkeep", "the barkeep"),
    npc("Greymantle", "the sage", "Grey"),
    npc("Captain Vessa", "Vessa", "the captain"),
    npc("Whisper", "the fence", address_only=True),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bartok, what's on tap tonight?", ["Bartok"]),
        ("Bartock, what's on tap tonight?", ["Bartok"]),  # STT misspelling
        ("Bar tok, another round please", ["Bartok"]),  # split by STT
        ("Hey barkeep, two ales.", ["Bartok"]),
        ("Grey Mantel, tell me about the Shadowfell.", ["Greymantle"]),
        ("gray mantle what do you know about the candle", ["Greymantle"]),
        ("Graymantle, please help us", ["Greymantle"]),
        ("Greymantel? Are you there?", ["Greymantle"]),
        ("Captain Vesa, we found the smugglers", ["Captain Vessa"]),
        ("Thank you, captain!", ["Captain Vessa"]),
        ("Bartok and Greymantle, what do you think?", ["Bartok", "Greymantle"]),
        ("Greymantle, Bartok, which of you saw it?", ["Greymantle", "Bartok"]),
        ("Bartok, what do you know about Greymantle?", ["Bartok"]),
        ("Whisper, what's the price?", ["Whisper"]),
        ("I don't trust Bartok.", []),  # talked about, not to
        ("Let's ask Greymantle tomorrow", []),
        ("Bartok's ale is the best in town", []),
        ("Okay so who wants to go first", []),  # players talking among themselves
        ("I roll for perception", []),
        ("the bartender looks tired", []),  # no false positive on similar words
        ("grab your mantle, it's cold", []),
    ],
)
def test_explicit_addressing(text: str, expected: list[str]) -> None:
    detector = AddressDetector(CAST)
    assert detector.detect("alice", text, now=0.0).npcs == expected


def test_continuation_within_window_then_expires() -> None:
    detector = AddressDetector(CAST, continuation_window_s=30)
    assert detector.detect("alice", "Bartok, what's on tap?", now=0).npcs == ["Bartok"]
    decision = detector.detect("alice", "And how much is the stout?", now=20)
    assert decision.npcs == ["Bartok"]
    assert decision.reason.startswith("continuation")
    # Another player has no continuation with Bartok.
    assert detector.detect("bob", "How much is the stout?", now=21).npcs == []
    # The window counts from the last exchange (20 s): 49 s is still inside, 80 s is not.
    assert detector.detect("alice", "And the mead?", now=49).npcs == ["Bartok"]
    assert detector.detect("alice", "What about rooms?", now=80).npcs == []


def test_naming_another_npc_switches_the_continuation() -> None:
    detector = AddressDetector(CAST)
    detector.detect("alice", "Bartok, hello", now=0)
    assert detector.detect("alice", "Greymantle, hello to you too", now=5).npcs == ["Greymantle"]
    assert detector.detect("alice", "what do you study?", now=10).npcs == ["Greymantle"]


def test_address_only_npc_never_answers_by_continuation_or_as_sole_npc() -> None:
    detector = AddressDetector(CAST, active=["Whisper"])
    assert detector.detect("alice", "what do you sell?", now=0).npcs == []
    assert detector.detect("alice", "Whisper, what do you sell?", now=1).npcs == ["Whisper"]
    assert detector.detect("alice", "and for how much?", now=2).npcs == []


def test_sole_active_npc_answers_unaddressed_lines() -> None:
    detector = AddressDetector(CAST, active=["Greymantle"])
    decision = detector.detect("alice", "what is this rune?", now=0)
    assert decision.npcs == ["Greymantle"]
    assert "sole active" in decision.reason
    detector.set_active(["Greymantle", "Bartok"])
    assert detector.detect("bob", "what is this rune?", now=0).npcs == []


def test_dm_puppeting_speaks_verbatim_and_players_cannot_puppet() -> None:
    detector = AddressDetector(CAST)
    decision = detector.detect("dm", "As Bartok: get out of my tavern!", now=0, is_dm=True)
    assert decision.npcs == ["Bartok"]
    assert decision.puppet_text == "get out of my tavern!"
    decision = detector.detect("dm", "Grey Mantel says, the stars are wrong.", now=0, is_dm=True)
    assert (decision.npcs, decision.puppet_text) == (["Greymantle"], "the stars are wrong.")
    # A player saying the same is just addressing (no verbatim puppeting).
    decision = detector.detect("alice", "As Bartok: get out!", now=0)
    assert decision.puppet_text is None
    # The DM can also simply address an NPC.
    assert detector.detect("dm", "Vessa, arrest them!", now=0, is_dm=True).npcs == ["Captain Vessa"]


def test_hot_reload_keeps_working() -> None:
    detector = AddressDetector(CAST)
    detector.set_npcs([*CAST, npc("Old Marta", "Marta")])
    assert detector.detect("alice", "Marta, any pies left?", now=0).npcs == ["Old Marta"]


@pytest.mark.parametrize(
    ("a", "b"),
    [("Greymantle", "gray mantle"), ("Greymantle", "Grey Mantel"), ("Bartok", "Bartock")],
)
def test_phonetic_keys_match_spelling_variants(a: str, b: str) -> None:
    assert phonetic_key(a.replace(" ", "")) == phonetic_key(b.replace(" ", ""))
