"""A name heard early: a final whose opening slot names nobody takes the NPC's name from the slot
look taken while the player was still talking (real Silero, Smart Turn, Whisper, espeak-ng).

Which name tiny.en hears in a synthesized voice's opening slot depends on the CPU ("Bartok" on
one instruction set, "Bar dok" on another), so the recognizer's opening is set by the test
(``MisheardOpening``): the lane's handling of the misheard slot is what is tested."""

from __future__ import annotations

import asyncio

import pytest

from bot.audio.speech import FasterWhisperStt, FinalTranscript, SpeakerLane, Vocabulary
from bot.audio.speech.turn_model import SmartTurnModel
from bot.table.session.timing import TimedStt
from bot.telemetry.metrics import Metrics

from .speech_helpers import (
    LaneWatch,
    MisheardOpening,
    espeak_pcm,
    normalize_words,
    stt_frames,
    stt_silence,
)

pytestmark = pytest.mark.model_verdict

NAMES = ["Bartok", "Greymantle", "Captain Vessa", "Whisper"]
VOCABULARY = Vocabulary(NAMES, names=NAMES)


def test_the_opening_slot_is_found_and_named() -> None:
    assert VOCABULARY.opening_names_nobody("Mardok, how much for the room?")
    assert VOCABULARY.opening_names_nobody("Well, Mardok, how much?")
    assert not VOCABULARY.opening_names_nobody("Bartok, how much?")
    assert not VOCABULARY.opening_names_nobody("Roll a die for me, Mardok.")  # not an opening
    assert not VOCABULARY.opening_names_nobody("Great, pour me a pint.")  # a filler is no name
    assert VOCABULARY.opening_name("Bartok.") == "Bartok"
    assert VOCABULARY.opening_name("Well, Captain Vessa, hi") == "Captain Vessa"
    assert VOCABULARY.opening_name("Alright, and now...") is None
    assert VOCABULARY.opening_name("Mirror, hold my bag.") is None
    assert VOCABULARY.with_opening_name("Mardok, how much?", "Bartok") == "Bartok, how much?"
    assert VOCABULARY.with_opening_name("Well, Mardok, hi", "Bartok") == "Well, Bartok, hi"
    assert VOCABULARY.with_opening_name("Bartok, hi", "Whisper") is None  # it names someone
    # names back to back are still in doubt: the second look decides
    assert VOCABULARY.with_opening_name("Mardok, Whisper, what's on?", "Bartok") is None


async def _say(lane: SpeakerLane, frames: list[bytes]) -> None:
    """Half real time: the partials (every 300 ms of audio) keep up on a slower machine."""
    for at in range(0, len(frames), 5):
        for frame in frames[at : at + 5]:
            lane.push(frame)
        await asyncio.sleep(0.2)


@pytest.mark.parametrize(
    ("text", "voice", "heard", "second", "named_early"),
    [
        # the partials and the final hear "Mardok, ..."; the slot look heard Bartok
        ("Bartok, how much for the room?", "en-us+m3", "Mardok", "Bartok", 1),
        # a player's name: the slot look hears no NPC, and none is made up
        ("Mira, hold my bag for a second.", "en-us+m3", "Mirror", "Mira", 0),
    ],
)
async def test_a_final_takes_the_name_its_slot_look_heard(
    whisper: FasterWhisperStt,
    turn_model: SmartTurnModel,
    text: str,
    voice: str,
    heard: str,
    second: str,
    named_early: int,
) -> None:
    metrics = Metrics()
    misheard = MisheardOpening(whisper, heard, second)
    stt = TimedStt(misheard, metrics)  # type: ignore[arg-type]  # as the table wraps it
    lane = SpeakerLane("arin", stt=stt, vocabulary=VOCABULARY, turn_model=turn_model)
    watch = LaneWatch(lane)
    await _say(lane, stt_frames(*espeak_pcm(text, voice)))
    look = lane._slot_look
    assert look is not None, "a partial opened with a slot that names nobody"
    await asyncio.wait([look.task])  # on a slow machine, as if the player spoke a little longer
    await _say(lane, stt_silence(1.5))
    final = await watch.next(FinalTranscript)
    await watch.close()
    # a pause's words may be named early too, before the final's (how many pauses are judged
    # depends on the CPU's pace): what matters is that the name came from the slot look
    assert (lane.named_early >= 1) == bool(named_early), (lane.named_early, final.text)
    named = [name for name in NAMES if name.lower() in final.text.lower()]
    assert named == (["Bartok"] if named_early else []), final.text
    assert metrics.sample("glyphoxa_stt_seconds_count", {"kind": "slot_look"}) == 1.0
    second_looks = metrics.sample("glyphoxa_stt_seconds_count", {"kind": "second_look"})
    assert (second_looks is None) == bool(named_early), second_looks  # a player's name: heard again


async def test_a_breath_is_not_heard_a_second_time(
    whisper: FasterWhisperStt, turn_model: SmartTurnModel
) -> None:
    """The words at a breath after "Mira, hold my bag" open with a slot that names nobody, so
    they are doubtful; their second look (0.4 s of the recognizer) waits for the turn to end
    there, and the player talking on cancels it: only the final is heard twice."""
    metrics = Metrics()
    stt = TimedStt(MisheardOpening(whisper, "Mirror", "Mira"), metrics)  # type: ignore[arg-type]
    lane = SpeakerLane("arin", stt=stt, vocabulary=VOCABULARY, turn_model=turn_model)
    watch = LaneWatch(lane)
    first = stt_frames(*espeak_pcm("Mira, hold my bag", "en-us+m3"))
    rest = stt_frames(*espeak_pcm("while I talk to the guard.", "en-us+m3"))
    await _say(lane, first + stt_silence(0.12))  # a breath: judged, shorter than complete_ms
    breath = lane._judge.current
    assert breath is not None, "the breath was judged"
    await asyncio.sleep(2.0)  # time for its words and, before the change, their second look
    assert breath.heard.done() is False, "doubtful words wait for the turn to end here"
    await _say(lane, rest + stt_silence(1.5))
    final = await watch.next(FinalTranscript)
    await watch.close()
    # One final holds the words after the breath too (most of them: a word may be misheard)
    rest_words = normalize_words("while I talk to the guard.")
    got = set(normalize_words(final.text))
    assert sum(word in got for word in rest_words) >= 3, final.text
    assert len(watch.of(FinalTranscript)) == 1, final.text
    assert breath.heard.cancelled()
    assert metrics.sample("glyphoxa_stt_seconds_count", {"kind": "second_look"}) == 1.0
