"""The end-of-turn policy: the model's score and the words, combined (pure, no model)."""

from __future__ import annotations

import pytest

from bot.audio.speech.turn_end import TurnEndPolicy, unfinished_words
from bot.settings.config import TurnConfig

NAMES = ["Bartok", "Greymantle", "Captain Vessa", "the barkeep"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Bartok, and", 'ends with "and"'),
        ("Bartok, and um", 'ends with "um"'),
        ("I want the", 'ends with "the"'),
        ("So I went to the market and uh", 'ends with "uh"'),
        ("Well, I was thinking...", "trails off"),
        ("Greymantle,", "trails off"),
        ("Bartok.", "a name alone"),
        ("Hey, Captain Vessa.", "a name alone"),
        ("The barkeep?", "a name alone"),
        ("Bartok, what's on tap tonight?", None),
        ("Great, pour me a pint.", None),
        ("What are you looking at?", None),
        ("Roll a die for me, Bartok.", None),
        ("", None),
    ],
)
def test_words_that_say_the_player_is_not_done(text: str, why: str | None) -> None:
    assert unfinished_words(text, NAMES) == why


def test_the_verdict_combines_the_score_with_the_words() -> None:
    config = TurnConfig(complete_ms=200, incomplete_ms=1000, threshold=0.5)
    policy = TurnEndPolicy(config, hangover_ms=500, names=NAMES)
    done = policy.verdict(0.97, "Bartok, what's on tap tonight?")
    assert (done.complete, done.wait_ms, done.reason) == (True, 200, "sounds finished")
    named = policy.verdict(0.97, "Bartok.")  # sounds finished, but it is only a name
    assert (named.complete, named.wait_ms, named.reason) == (False, 1000, "a name alone")
    doubt = policy.verdict(0.2, "Bartok, I would like a room for the night")
    assert (doubt.complete, doubt.wait_ms, doubt.reason) == (False, 1000, "sounds unfinished")
    unheard = policy.verdict(0.9, "")  # no words yet: the sound decides
    assert unheard.complete
    unsure = TurnConfig().unsure_ms
    assert config.complete_ms < unsure < config.incomplete_ms
    short = policy.verdict(0.97, "Great.")  # "Great," then a breath before "pour me a pint"
    assert (short.complete, short.wait_ms, short.reason) == (True, unsure, "a word or two")
    looped = policy.verdict(0.97, " ".join(["Great."] * 15))  # Whisper's loop on one word
    assert (looped.complete, looped.wait_ms, looped.reason) == (True, unsure, "a word or two")
    misheard = policy.verdict(0.97, "Brain-in-all.")  # "Greymantle," heard as one odd word
    assert (misheard.wait_ms, misheard.reason) == (unsure, "a word or two")
    asked = policy.verdict(0.07, "Bartok, is the stew any good?")  # a voice the model doubts
    assert (asked.complete, asked.wait_ms, asked.reason) == (True, unsure, "a whole question")
    for flat in ("Bartok, Any news from the docks.", "Is it raining outside."):
        heard = policy.verdict(0.2, flat)  # a flat voice: Whisper wrote a period
        assert (heard.complete, heard.wait_ms, heard.reason) == (True, unsure, "a whole question")
    for said in ("Bartok, the docks were busy.", "Well, I think we are lost.", "Roll for me."):
        told = policy.verdict(0.2, said)  # not a question: the sound decides
        assert (told.complete, told.wait_ms, told.reason) == (False, 1000, "sounds unfinished")
    stub = policy.verdict(0.07, "Is it?")  # too short to vouch for itself
    assert (stub.complete, stub.wait_ms) == (False, 1000)
    aside = policy.verdict(0.97, "I did, it ran right past my boots.", table_talk=True)
    assert (aside.complete, aside.wait_ms, aside.reason) == (True, unsure, "table talk")
    trailing = policy.verdict(0.97, "Upstairs, if the rooms are cheap,", table_talk=True)
    assert (trailing.complete, trailing.wait_ms) == (False, 1000)  # the words still decide
    # only a whole question vouches for a turn the sound doubts (its second look may start now)
    assert asked.whole_question and heard.whole_question
    assert not any(v.whole_question for v in (done, short, told, stub, aside, unheard))
    fallback = policy.verdict(None, "Bartok, and")  # the model could not score: plain hangover
    assert (fallback.complete, fallback.wait_ms, fallback.reason) == (False, 500, "no turn model")
    assert policy.fallback() == fallback


@pytest.mark.parametrize("score", [0.03, 0.97])
def test_a_whole_question_closed_with_a_comma_waits_unsure_not_incomplete(score: float) -> None:
    """Whisper heard "Bartok, is the stew any good?" cut at the pause as "..., any good,": it
    is a whole question all the same, whatever the sound says; a clause that trails off is not."""
    config = TurnConfig(complete_ms=200, unsure_ms=500, incomplete_ms=1000, threshold=0.5)
    policy = TurnEndPolicy(config, hangover_ms=500, names=NAMES)
    for asked in (
        "Bartok, is the stew any good,",
        "Bartok, what's on tap tonight,",
        "Is it raining outside,",
        "Captain Vessa, how much for a room,",
    ):
        verdict = policy.verdict(score, asked)
        assert (verdict.complete, verdict.wait_ms) == (True, 500), asked
        assert verdict.reason == "a question at a comma" and verdict.whole_question, asked
    for going_on in (
        "Bartok, what do you,",  # too short to be whole
        "Bartok, is the,",  # ends with "the"
        "Upstairs, if the rooms are cheap,",  # no question
        "Bartok, the stew is cold,",
        "Well, I was thinking...",
        "Bartok, is the stew any good...",  # trails off for real
        "Greymantle,",
    ):
        verdict = policy.verdict(score, going_on)
        assert (verdict.complete, verdict.wait_ms) == (False, 1000), going_on
        assert not verdict.whole_question, going_on
    aside = policy.verdict(score, "Where are we sleeping tonight,", table_talk=True)
    assert (aside.complete, aside.wait_ms) == (False, 1000)  # table talk: nobody waits for it
