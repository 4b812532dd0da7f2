"""What a small model must never say: other speakers' lines, in any of the label forms it
copies from its prompt, even when the label arrives token by token."""

from __future__ import annotations

import pytest

from npcs.engines.guard import ContentGuard, parrots

NAMES = ["Arin", "Tobble", "Captain Vessa"]


def speak(pieces: list[str]) -> tuple[str, ContentGuard]:
    guard = ContentGuard(NAMES, own=["Bartok", "Bart"])
    said = "".join(guard.push(piece) for piece in pieces) + guard.flush()
    return said, guard


@pytest.mark.parametrize(
    "answer",
    ["Arin: Bartok, what's on tap?", "Arin says to you: Bartok, what's on tap?", "Arin said: Hi.",
     "captain vessa says: the docks are quiet.", "Arin (npc): Ah, a little one.",
     "Tobble (player character): me too"],
)  # fmt: skip
def test_an_answer_that_opens_with_another_speakers_line_says_nothing(answer: str) -> None:
    for size in (1, 4, 100):
        said, guard = speak([answer[i : i + size] for i in range(0, len(answer), size)])
        assert said == "" and guard.stopped


def test_own_labels_are_stripped_and_a_later_echo_ends_the_answer() -> None:
    said, guard = speak(["Bartok says", " to you: Aye, ", "dark ale. Tobble says", ": me too"])
    assert said.strip() == "Aye, dark ale." and guard.stopped


def test_a_label_copied_from_the_campaign_facts_is_a_label() -> None:
    """The prompt's facts read "- Bartok (npc): Dwarf barkeep"; the model opens with that."""
    for size in (1, 3, 100):
        answer = "Bartok (npc): Aye, the dark ale. Tobble (player_character): me too"
        said, guard = speak([answer[i : i + size] for i in range(0, len(answer), size)])
        assert said.strip() == "Aye, the dark ale." and guard.stopped, size


def test_an_echo_of_the_players_words_is_recognized() -> None:
    heard = "Another round for the table, please, Bartok!"
    for echo in ("Bartok.", "Another round for the table,", "another round for the table please"):
        assert parrots(echo, heard), echo
    for answer in ("Aye, another round!", "Bartok pours.", ""):
        assert not parrots(answer, heard), answer
