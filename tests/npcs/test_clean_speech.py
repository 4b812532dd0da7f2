"""Clean speech: only the NPC's own line reaches the voice, and every repair is counted.

The inputs are what the embedded model (SmolLM2) was seen writing at the table (role labels,
prompt scaffolding, echoes, emoji, "as an AI") and what larger models write (markdown, stage
directions)."""

from __future__ import annotations

import pytest

from campaigns.basics import Tier
from npcs.clean_speech import LineCleaner, SpeechContext
from npcs.spoken_budget import SpokenBudget, budget_words, token_cap

TABLE = SpeechContext(
    heard="How much for the chain shirt?",
    speakers=["Arin", "Tobble", "Greymantle", "Vinnie"],
    own=["Bartok", "Bart"],
    earlier=[
        "Welcome to the Rusty Flagon!",
        # another NPC's line: small models copy the last thing said at the table
        "I'm glad you're enjoying the catch today, Jeb. The catch is a bit of a challenge.",
    ],
)

REPAIRED = [
    # (what the model wrote, what is spoken, the repair counted)
    ('Arin, "How much for the change shirt?', "", "echo"),
    ("Hello there, how much for the chain shirt, you ask?", "", "echo"),
    ("The player: Vinnie wants a drink.", "", "label"),
    ("Arin (Greymantle: the candle is lit.", "", "label"),
    ("Greymantle: I know nothing of it.", "", "label"),
    ("you said:", "", "label"),
    ("Bartok: Aye, the dark ale.", "Aye, the dark ale.", "label"),
    ('Bartok (you) said: "Ale for you."', "Ale for you.", "label"),
    ("Sure! Here's my response: the ale is fine.", "the ale is fine.", "label"),
    ("I'll make it concise and avoid mentioning Bartok.", "", "scaffolding"),
    ("Answer as Bartok. Arin says to you: hello", "", "scaffolding"),
    ("Your mood right now is grumpy, so I let it color what I say.", "", "scaffolding"),
    # SmolLM2 after an empty memory search, in a rehearsal: a tool's words and a chatbot's
    ("Rolla Dye, no information available.", "", "scaffolding"),
    ("I'm ready to continue.", "", "scaffolding"),
    ("No results found for the docks.", "", "scaffolding"),
    ("I'm not an AI designed to pour ale.", "", "broken character"),
    ("As a language model, I cannot taste ale.", "", "broken character"),
    ("Ale is two copper! 🍺😀", "Ale is two copper!", "emoji"),
    ("**Two** copper, friend.", "Two copper, friend.", "markdown"),
    ("- Ale\n- Mead", "Ale Mead", "markdown"),
    ("*wipes a mug* Two copper, friend.", "Two copper, friend.", "stage direction"),
    ("(laughs) That'll be five gold.", "That'll be five gold.", "stage direction"),
    ("[grins] Fifty gold for the shirt.", "Fifty gold for the shirt.", "stage direction"),
    ("Welcome to the Rusty Flagon!", "", "repeat"),
    ("Mara, I'm glad you're enjoying the catch today.", "", "repeat"),
    ("The catch is a bit of a challenge, but I'll try again.", "", "repeat"),
]


def test_a_line_sharing_a_few_words_with_earlier_ones_is_still_said() -> None:
    cleaner = LineCleaner(TABLE)
    line = "The catch today? Ask the fishmonger, I only pour the ale."
    assert cleaner.clean(line) == line
    assert cleaner.clean(line) == ""  # but never twice in one answer
    assert dict(cleaner.summary()) == {"repeat": 1}


@pytest.mark.parametrize(("written", "spoken", "repair"), REPAIRED)
def test_a_piece_that_fails_is_cut_to_its_clean_part_and_counted(
    written: str, spoken: str, repair: str
) -> None:
    cleaner = LineCleaner(TABLE)
    assert cleaner.clean(written) == spoken
    assert repair in dict(cleaner.summary())


@pytest.mark.parametrize(
    "line",
    [
        "A chain shirt costs fifty gold, lad.",
        "Aye, the dark ale is on tap tonight.",
        "I've heard the old mill grinds at night.",
        "Ask Greymantle about the candle, not me.",
        "Three copper for a room, two for the stew.",
        "I have no news of the docks, and no information I'd sell you cheap.",
        "Are you ready to pay, or shall we continue haggling?",
    ],
)
def test_a_clean_line_passes_untouched(line: str) -> None:
    cleaner = LineCleaner(TABLE)
    assert cleaner.clean(line) == line
    assert cleaner.summary() == ()


def test_a_stage_direction_left_open_goes_on_into_the_next_piece() -> None:
    cleaner = LineCleaner(TABLE)
    assert cleaner.clean("*wipes the bar and smiles.") == ""
    assert cleaner.clean("* Welcome, friend!") == "Welcome, friend!"
    assert dict(cleaner.summary()) == {"stage direction": 2}


def test_an_npc_allowed_emotes_keeps_its_stage_directions() -> None:
    context = SpeechContext(heard="Hello", own=["Bartok"], emotes=True)
    assert LineCleaner(context).clean("*wipes a mug* Welcome!") == "*wipes a mug* Welcome!"


def test_in_a_roll_turn_another_number_is_never_spoken() -> None:
    cleaner = LineCleaner(SpeechContext(heard="Roll a d20", own=["Bartok"], roll_total=14))
    assert cleaner.clean("Fourteen, not bad at all.") == "Fourteen, not bad at all."
    assert cleaner.clean("A 14, lad.") == "A 14, lad."
    assert cleaner.clean("You rolled a 7!") == ""
    assert dict(cleaner.summary()) == {"contradicts the roll": 1}


def test_a_line_is_never_said_twice_in_one_answer() -> None:
    cleaner = LineCleaner(SpeechContext(heard="Hi", own=["Bartok"]))
    assert cleaner.clean("The ale is fresh today.") == "The ale is fresh today."
    assert cleaner.clean("The ale is fresh today!") == ""


def test_budgets_per_tier_and_overrides() -> None:
    assert [budget_words(None, tier) for tier in Tier] == [30, 60, 120]
    assert budget_words({"fast": 12, "deep": None}, Tier.FAST) == 12
    assert budget_words({"fast": 12, "deep": None}, Tier.DEEP) == 120
    assert token_cap(30) >= 48 and token_cap(120) > token_cap(30)


def test_the_budget_ends_an_answer_at_the_last_whole_sentence_that_fits() -> None:
    budget = SpokenBudget(10)
    assert budget.take("The ale is fresh.") == "The ale is fresh."
    assert budget.take("Two copper a pint.") == "Two copper a pint."
    assert budget.take("And the stew is hot tonight.") == ""
    assert budget.hit and budget.full and budget.spent == 8


def test_a_first_sentence_past_the_budget_is_cut_at_a_clause_and_closed() -> None:
    budget = SpokenBudget(8)
    said = budget.take(
        "Well, the mill, which grinds at night, was built by my grandfather long ago."
    )
    assert said == "Well, the mill, which grinds at night."
    assert budget.hit


def test_a_fact_the_turn_was_given_may_be_told_again_in_its_words() -> None:
    """Another NPC told the Reef Bell's story earlier; this turn recalled the same fact, so
    saying it again is an answer, not a copy. Chatter copied beside it is still dropped."""
    fact = "The Reef Bell is a bronze bell salvaged from the sunken chapel."
    context = SpeechContext(
        heard="Keeper, do you remember the Reef Bell?",
        earlier=[f"From what I recall, {fact[:1].lower()}{fact[1:]} Lovely weather for it."],
    )
    told = "From what I recall, the reef bell is a bronze bell salvaged from the sunken chapel."
    cleaner = LineCleaner(context)
    assert cleaner.clean(told) == ""  # not given this turn: a copy
    grounded = LineCleaner(SpeechContext(heard=context.heard, earlier=context.earlier,
                                         grounding=[f"Reef Bell — {fact}"]))  # fmt: skip
    assert grounded.clean(told) == told
    assert grounded.clean("Lovely weather for it.") == ""  # an earlier sentence, said again
    from_a_tool = LineCleaner(context)  # the model searched memory itself: its result arrives
    from_a_tool.ground(f'{{"results": [{{"text": "Reef Bell: {fact}"}}]}}')
    assert from_a_tool.clean(told) == told


def test_an_opening_an_earlier_line_shared_waits_for_its_sentence() -> None:
    """The first piece of an answer may end at a comma; one that opens as an earlier line did
    is held, so the whole sentence decides (here: a short fact given this turn, kept)."""
    context = SpeechContext(
        earlier=["I have read that a drowned chapel lies under the reef."],
        grounding=["Harlan Voss: customs inspector of Saltmarsh"],
    )
    cleaner = LineCleaner(context)
    assert cleaner.unfinished("I have read that a")
    assert not cleaner.unfinished("Aye, I have heard of him,")
    told = "I have read that a customs inspector of Saltmarsh."
    assert cleaner.clean(told) == told
    assert cleaner.clean("I have read that a drowned chapel lies under the reef.") == ""


def test_a_short_sentence_is_not_said_twice_in_one_answer() -> None:
    cleaner = LineCleaner(SpeechContext(earlier=["Aimless."]))
    assert cleaner.clean("Aimless.") == "Aimless."  # short lines may come back in a new answer
    assert cleaner.clean("Aimless.") == ""
    assert dict(cleaner.summary()) == {"repeat": 1}


def test_a_players_earlier_line_said_back_is_an_echo() -> None:
    """SmolLM2 was seen answering "Any rooms free?" with "What's on tap tonight?", a question
    asked a minute before: a sentence mostly in a player's earlier words goes whole, while an
    answer that reuses a few of them, or tells a fact the turn was given, is said."""
    context = SpeechContext(
        heard="Bartok, any rooms free tonight?",
        own=["Bartok"],
        asked_before=["Bartok, what's on tap tonight?", "I heard the old mill burned down. Sad."],
    )
    cleaner = LineCleaner(context)
    assert cleaner.clean("What's on tap tonight?") == ""
    assert cleaner.clean("The old mill burned down, you say.") == ""
    for answer in ("On tap tonight? Dark ale, as ever.", "One room left, up the stairs."):
        assert cleaner.clean(answer) == answer
    assert dict(cleaner.summary()) == {"echo": 2}
    fact = "Old Mill — burned down three nights ago"
    told = LineCleaner(SpeechContext(asked_before=context.asked_before, grounding=[fact]))
    assert told.clean("The old mill burned down, three nights ago.") != ""
