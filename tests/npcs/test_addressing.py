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


# -- talked to or talked about, name parts, misheard names, thanks-then-ask ---------------------

TABLE = [
    *CAST,
    npc("Lady Elspeth Marrow", "the ghost", address_only=True),
    npc("Hagar the Boatman"),
    npc("Brother Aldric Venn", "the priest"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a name talked about addresses nobody
        ("so what did the ghost say last time", []),
        ("Greymantle said the tower was cursed.", []),
        ("what's Greymantle doing up at this hour?", []),
        ("we could sell the ring to Whisper", []),
        ("Bartok slides a mug across the bar.", []),  # the DM narrating
        ("Behind the bar, Bartok is polishing a glass.", []),
        ("I pull my grey cloak tighter", []),  # the alias "Grey" after a determiner
        ("I attack the ghost with my sword", []),
        ("Vessa and I went to the docks", []),
        # ... and the same names spoken to
        ("Ghost, what did you see that night?", ["Lady Elspeth Marrow"]),
        ("bartok pour me another", ["Bartok"]),
        ("bartok can we get some bread", ["Bartok"]),
        ("can you open the gate captain", ["Captain Vessa"]),
        ("how much for the crossing hagar", ["Hagar the Boatman"]),
        ("What are you waiting for, Bartok?", ["Bartok"]),  # "for" is in another clause
        # surnames and parts of a name, with or without a title
        ("Marrow, who murdered you?", ["Lady Elspeth Marrow"]),
        ("Lady Marrow, we found your locket.", ["Lady Elspeth Marrow"]),
        ("Venn, hold the door!", ["Brother Aldric Venn"]),
        ("Father Aldric, bless this sword.", ["Brother Aldric Venn"]),  # a title not in the name
        ("Boatman, wait for us!", ["Hagar the Boatman"]),
        ("Hagar, row faster!", ["Hagar the Boatman"]),
        # Whisper's spellings
        ("Bar talk, pour me a drink", ["Bartok"]),
        ("Aldrich, we need your help", ["Brother Aldric Venn"]),
        ("Lady Morrow, show yourself!", ["Lady Elspeth Marrow"]),
        ("Greymental, a word?", ["Greymantle"]),  # two edits off a long name that sounds alike
        ("the bar's packed tonight", []),
        ("I nock an arrow, quick!", []),  # an everyday word one letter off "Marrow"
        # thanks, then a request to someone else: only they are asked
        ("Thanks, Bartok. Greymantle, where is the tower?", ["Greymantle"]),
        ("thanks greymantle. bartok where's the privy", ["Bartok"]),
        ("Thanks Bartok, Greymantle where is the tower", ["Greymantle"]),
        ("Bartok, where's the key? Thanks, Greymantle.", ["Bartok"]),
        ("Thanks, Bart!", ["Bartok"]),  # thanks alone goes to whom it names
        ("Bartok, a pint. Greymantle, what's that book?", ["Bartok", "Greymantle"]),
    ],
)
def test_spoken_to_or_talked_about(text: str, expected: list[str]) -> None:
    detector = AddressDetector(TABLE)
    assert detector.detect("alice", text, now=0.0).npcs == expected


def test_the_reason_says_who_was_only_thanked_and_why_each_name_counts() -> None:
    detector = AddressDetector(TABLE)
    decision = detector.detect("alice", "Thanks, Bartok. Greymantle, where is the tower?", 0.0)
    assert decision.reason == (
        "named Greymantle (exact 'greymantle'); Bartok only thanked or greeted"
    )
    decision = detector.detect("alice", "Bartok, what did the ghost say?", 0.0)
    assert [(m.npc, m.vocative, m.why) for m in decision.mentions] == [
        ("Bartok", True, "set off at the start"),
        ("Lady Elspeth Marrow", False, "after 'did'"),
    ]


def test_a_name_part_ranks_below_what_the_dm_wrote_and_a_shared_part_names_nobody() -> None:
    cast = [
        npc("Captain Vessa Thornwood", "the captain"),
        npc("Aldric Stone"),
        npc("Aldric Venn"),
        npc("Venn Hollow", "Venn"),  # the alias a DM wrote beats Aldric Venn's surname
    ]
    detector = AddressDetector(cast)

    def answers(text: str) -> list[str]:
        return detector.detect("p", text, 0.0, record=False).npcs

    thornwood = ["Captain Vessa Thornwood"]
    assert answers("Thornwood, open the gate!") == thornwood
    assert answers("Captain Thornwood, a word") == thornwood
    assert answers("Captain, a word") == thornwood
    assert answers("Venn, a word") == ["Venn Hollow"]
    assert answers("Aldric, a word") == []  # two NPCs are "Aldric"
    assert answers("Aldric Stone, a word") == ["Aldric Stone"]


def test_a_title_or_an_of_phrase_alone_is_not_a_name() -> None:
    morwen = "Sister Morwen of the Ashen Veil"
    detector = AddressDetector([npc(morwen), npc("Bartok")])
    assert detector.detect("p", "Morwen, help us", 0.0, record=False).npcs == [morwen]
    assert detector.detect("p", "Sister Morwen, help us", 0.0, record=False).npcs == [morwen]
    for word in ("Sister", "Veil", "Ashen"):
        assert detector.detect("p", f"{word}, help us", 0.0, record=False).npcs == []


def test_a_name_after_the_is_a_noun_misheard_in_a_conversation() -> None:
    """Talking with Bartok, "And what about the bard?" came back from Whisper as "the Bart"
    (his alias): a person's name does not follow "the", so the conversation goes on. A role
    after "the", or the name outside a conversation with its NPC, still only talks about them."""
    detector = AddressDetector(CAST)
    detector.detect("alice", "Bartok, who is that in the corner?", now=0)
    heard = detector.detect("alice", "And what about the Bart?", now=8)
    assert heard.npcs == ["Bartok"] and heard.reason.startswith("continuation"), heard
    for about in ("And what about the barkeep?", "I don't trust Bartok."):
        detector.detect("alice", "Bartok, who is that in the corner?", now=10)
        assert detector.detect("alice", about, now=12).npcs == [], about
    detector.detect("alice", "Captain Vessa, any news?", now=20)
    assert detector.detect("alice", "And what about the captain?", now=22).npcs == []
    other = AddressDetector(CAST)  # nobody talks with Bartok: his name only talked about
    assert other.detect("bob", "And what about the Bart?", now=0).npcs == []
