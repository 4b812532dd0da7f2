"""Sentence streaming for LLM text, vocabulary post-correction and backchannel recognition."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.audio.speech import BackchannelDetector, Vocabulary
from bot.audio.speech.vocabulary import phonetic_key
from npcs.sentences import SentenceSplitter, split_sentences


def stream(text: str, step: int) -> list[str]:
    streamer = SentenceSplitter()
    out: list[str] = []
    for i in range(0, len(text), step):
        out += streamer.push(text[i : i + step])
    rest = streamer.flush()
    return out + ([rest] if rest else [])


def test_sentences_stream_out_as_soon_as_they_end() -> None:
    streamer = SentenceSplitter()
    assert streamer.push("Welcome, traveler") == []
    assert streamer.push("! The ale") == ["Welcome, traveler!"]
    assert streamer.push(" costs 3.5 gold.") == []  # not certain until the next whitespace
    assert streamer.push(" Mr. Smith") == ["The ale costs 3.5 gold."]
    assert streamer.push(" paid. Anything else?") == ["Mr. Smith paid."]
    assert streamer.flush() == "Anything else?"


def test_abbreviations_initials_and_quotes() -> None:
    text = 'Dr. Vex said "Run!" Then J. R. left, e.g. at dawn... Fine? Yes.'
    assert split_sentences(text) == [
        'Dr. Vex said "Run!"',
        "Then J. R. left, e.g. at dawn...",
        "Fine?",
        "Yes.",
    ]


@given(
    st.lists(st.sampled_from(["Hi.", "Mr. Bo", "3.5 gold", "Go!", "St. Ives?", "ok"]), max_size=8),
    st.integers(1, 7),
)
def test_streaming_loses_and_reorders_nothing(parts: list[str], step: int) -> None:
    text = " ".join(parts)
    assert " ".join(stream(text, step)).split() == text.split()
    assert stream(text, step) == split_sentences(text)


def test_vocabulary_maps_near_misses_to_campaign_names() -> None:
    vocabulary = Vocabulary(["Greymantle", "Shadowfell", "Bartok", "Neverwinter", "Al"])
    assert vocabulary.correct("gray mantle, what do you know?") == "Greymantle, what do you know?"
    assert vocabulary.correct("Hey bar tok, a drink") == "Hey Bartok, a drink"
    assert vocabulary.correct("tell me about the shadow fell.") == "tell me about the Shadowfell."
    assert vocabulary.correct("Graymantle's tower") == "Greymantle's tower"
    assert vocabulary.correct("the tavern is great tonight") == "the tavern is great tonight"
    assert vocabulary.correct("Greymantle knows") == "Greymantle knows"
    assert "Greymantle" in vocabulary.prompt() and "Al" not in vocabulary.terms
    assert phonetic_key("Grey") == phonetic_key("gray")


def test_backchannels_are_recognized_but_real_words_are_not() -> None:
    detector = BackchannelDetector(["mhm", "uh-huh", "yeah", "okay"])
    for noise in (
        "Mm-hmm.",
        "Uh huh",
        "yeah, yeah",
        "Okay.",
        "",
        "Hmm...",
        "Well...",
        "Er, um",
        "Wow.",
        "Ow.",
    ):
        assert detector.is_backchannel(noise), noise
    for words in (
        "Yeah, give me the ale",
        "Stop!",
        "wait",
        "Well, Bartok, pour one",
        "Wow, really?",
    ):
        assert not detector.is_backchannel(words) and detector.has_content(words)


def test_first_clause_can_be_spoken_early() -> None:
    streamer = SentenceSplitter(first_clause_words=3)
    assert streamer.push("Ah, you") == []  # "Ah," is too short to stand alone
    assert streamer.push(" again, my old friend, welcome") == ["Ah, you again,"]
    assert streamer.push(" back. It has been,") == ["my old friend, welcome back."]
    assert streamer.push(" what, years?") == []
    assert streamer.flush() == "It has been, what, years?"
    assert SentenceSplitter().push("Ah, you again, my old friend, welcome ") == []


def _pieces(text: str, step: int = 3) -> list[str]:
    """``text`` streamed ``step`` characters at a time, as an LLM's deltas arrive."""
    streamer = SentenceSplitter(first_clause_words=4, first_phrase_words=4)
    pieces: list[str] = []
    for at in range(0, len(text), step):
        pieces += streamer.push(text[at : at + step])
    rest = streamer.flush()
    return pieces + ([rest] if rest else [])


def test_a_first_sentence_without_a_comma_ends_before_its_next_phrase() -> None:
    assert _pieces("The dark ale is on tap tonight. It costs two coppers.") == [
        "The dark ale is",
        "on tap tonight.",
        "It costs two coppers.",
    ]
    # only the first piece: later sentences stay whole
    assert _pieces("Aye. The dark ale is on tap tonight and the stew is hot.") == [
        "Aye.",
        "The dark ale is on tap tonight and the stew is hot.",
    ]
    # no phrase in sight: past four more words, any word ends it
    assert _pieces("Greetings brave traveller friend mine own dear guest welcome here.") == [
        "Greetings brave traveller friend mine own dear guest",
        "welcome here.",
    ]
    # short answers are not cut, and a comma after four words still wins
    assert _pieces("Welcome back, friend.") == ["Welcome back, friend."]
    assert _pieces("Well now my friend, that is on the house.") == [
        "Well now my friend,",
        "that is on the house.",
    ]


def test_a_growing_word_is_never_cut() -> None:
    streamer = SentenceSplitter(first_phrase_words=4)
    assert streamer.push("The dark ale is o") == []  # "o" may become "old" or "on"
    assert streamer.push("n ") == ["The dark ale is"]
    assert streamer.pending == "on "
