"""Reading a player's line for a table action without a model: rolls and knowledge questions."""

from __future__ import annotations

import pytest

from npcs.table_intents import DiceRequest, dice_request, is_rules_question, knowledge_query

ROLLS = [
    ("Roll a die for me, Bartok.", "1d20", ""),
    ("Bartok, roll a d20 for me.", "1d20", ""),
    ("roll 2d6+3 for me", "2d6+3", ""),
    ("Can you roll two d six plus three?", "2d6+3", ""),
    ("Roll for initiative!", "1d20", "initiative"),
    ("Roll initiative.", "1d20", "initiative"),
    ("Jeb, roll with advantage.", "2d20kh1", "advantage"),
    ("Roll with disadvantage, please.", "2d20kl1", "disadvantage"),
    ("roll a D-20", "1d20", ""),
    ("Roll a d 20 please.", "1d20", ""),
    ("Bartok roll me a d twenty", "1d20", ""),
    ("Please roll a perception check.", "1d20", "perception"),
    ("Roll percentile.", "1d100", ""),
    ("roll 4d6kh3", "4d6kh3", ""),
    ("Could you roll a twenty-sided die?", "1d20", ""),
    ("Roll a d8 for damage.", "1d8", "damage"),
    ("Okay, roll it.", "1d20", ""),
    ("Roll.", "1d20", ""),
    ("I want you to roll a d12.", "1d12", ""),
    ("Go ahead and roll 1d20+5.", "1d20+5", ""),
]

NOT_ROLLS = [
    "Don't roll yet.",
    "Do not roll until I say so.",
    "The roll of the ship makes me sick.",
    "I rolled a fifteen.",
    "I'll roll for it myself.",
    "Let's roll out at dawn.",
    "A bread roll, please.",
    "He will roll over in his grave.",
    "Rock and roll!",
    "Roll call, everyone!",
    "Bartok, what's on tap tonight?",
    "We roll at midnight.",
    "Roll the bones, as they say.",
]


@pytest.mark.parametrize(("line", "expression", "purpose"), ROLLS)
def test_a_roll_asked_of_the_npc_is_read_with_its_dice(
    line: str, expression: str, purpose: str
) -> None:
    assert dice_request(line, ("Bartok", "Jeb")) == DiceRequest(expression, purpose)


@pytest.mark.parametrize("line", NOT_ROLLS)
def test_the_word_roll_that_asks_for_no_roll_rolls_nothing(line: str) -> None:
    assert dice_request(line, ("Bartok",)) is None


def test_knowledge_query_keeps_the_words_worth_searching() -> None:
    names = ("Greymantle", "the sage", "Grey")
    assert knowledge_query("Greymantle, what happened at the old mill?", names) == "old mill"
    assert knowledge_query("Tell me about the Black Candle, sage.", names) == "black candle"
    assert knowledge_query("Grey, what do you remember?", names) == ""


def test_rules_questions_are_told_from_lore() -> None:
    assert is_rules_question("How does grappling work?")
    assert is_rules_question("What are the rules for concentration?")
    assert not is_rules_question("What happened at the old mill?")


@pytest.mark.parametrize(
    ("heard", "expression"),
    [
        ("Bartok, Rolla Dye for me.", "1d20"),
        ("Bartok, role a d20 for me.", "1d20"),
        ("Jeb rolls a die for me.", "1d20"),
    ],
)
def test_whispers_spellings_of_a_roll_still_roll(heard: str, expression: str) -> None:
    request = dice_request(heard, ("Bartok", "Jeb"))
    assert request is not None and request.expression == expression


@pytest.mark.parametrize(
    "line", ["My role is the healer.", "The role of the ship.", "Rolla, hello!"]
)
def test_words_that_sound_like_roll_are_no_roll(line: str) -> None:
    assert dice_request(line, ("Bartok",)) is None
