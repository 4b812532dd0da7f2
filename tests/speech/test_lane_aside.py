"""A final's two looks are scheduler jobs of their own: for players talking among themselves
they wait (``ASIDE``) while an NPC's answer is on its way; for a player talking to an NPC they
do not."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from bot.audio.speech import FinalTranscript, SpeakerLane, SpeechEnded, SpeechStarted, Vocabulary
from bot.audio.speech.endpointing import TurnModel
from bot.audio.speech.protocols import FirstLook
from bot.audio.speech.scheduler import CpuScheduler, Work

from .speech_helpers import EnergyVad, pcm_to_frames, silence_frames, tone_pcm

pytestmark = pytest.mark.model_verdict


class _TwoLooks:
    """A recognizer whose first look leaves a name in doubt; notes whether each look came
    after the answer was out."""

    def __init__(self, answer_out: asyncio.Event) -> None:
        self.answer_out = answer_out
        self.after_answer: list[tuple[str, bool]] = []

    async def transcribe(
        self, audio: np.ndarray, *, partial: bool = False, vocabulary: Vocabulary | None = None
    ) -> str:
        return "" if partial else "Mardok, one more."

    async def first_look(
        self, audio: np.ndarray, *, vocabulary: Vocabulary | None = None
    ) -> FirstLook:
        self.after_answer.append(("first", self.answer_out.is_set()))
        return FirstLook("Mardok, one more.", doubtful=True)

    async def second_look(
        self, audio: np.ndarray, first: FirstLook, *, vocabulary: Vocabulary | None = None
    ) -> str:
        self.after_answer.append(("second", self.answer_out.is_set()))
        return "Bartok, one more."


async def _final_during_an_answer(addressing: bool | None) -> tuple[_TwoLooks, CpuScheduler]:
    scheduler = CpuScheduler(aside_wait_s=10.0)
    answer_out = asyncio.Event()
    stt = _TwoLooks(answer_out)
    names = ["Bartok"]
    lane = SpeakerLane(
        "tobble", stt=stt, vad=EnergyVad(), scheduler=scheduler,
        vocabulary=Vocabulary(names, names=names),
    )  # fmt: skip

    ended = asyncio.Event()

    async def answer() -> None:  # an NPC answers someone else meanwhile
        with scheduler.answering():
            await ended.wait()
            await asyncio.sleep(0.2)  # looks taken at once are long done by then
            answer_out.set()

    pcm = tone_pcm()
    for frame in pcm_to_frames(pcm, 48_000) + silence_frames(1.0):
        lane.push(frame)
    lane.end_input()
    answering = asyncio.create_task(answer())
    finals = []
    async for event in lane:
        if isinstance(event, SpeechStarted):
            lane.addressing = addressing  # what the table made of the partials
        elif isinstance(event, SpeechEnded):
            ended.set()
        elif isinstance(event, FinalTranscript):
            finals.append(event.text)
    await answering
    assert finals == ["Bartok, one more."]  # heard again either way: nothing is dropped
    return stt, scheduler


async def test_table_talk_is_looked_at_again_once_the_answer_is_out() -> None:
    stt, scheduler = await _final_during_an_answer(addressing=False)
    assert stt.after_answer == [("first", True), ("second", True)]
    assert scheduler.stats[Work.ASIDE].ran == 2


@pytest.mark.parametrize("addressing", [True, None])
async def test_a_player_talking_to_an_npc_is_looked_at_again_at_once(
    addressing: bool | None,
) -> None:
    stt, scheduler = await _final_during_an_answer(addressing=addressing)
    assert stt.after_answer == [("first", False), ("second", False)]
    assert scheduler.stats[Work.ASIDE].ran == 0


async def test_table_talk_s_words_at_a_pause_are_heard_at_once(turn_model: TurnModel) -> None:
    """They may still say the player is not done ("Fair enough." then more: a word or two
    waits longer), so only their second look waits."""
    scheduler = CpuScheduler()
    stt = _TwoLooks(asyncio.Event())
    lane = SpeakerLane(
        "tobble", stt=stt, vad=EnergyVad(), scheduler=scheduler, turn_model=turn_model,
        vocabulary=Vocabulary(["Bartok"], names=["Bartok"]),
    )  # fmt: skip
    pcm = tone_pcm()

    async def feed() -> None:  # in real time: a pause is judged as it happens
        for frame in pcm_to_frames(pcm, 48_000) + silence_frames(1.5):
            lane.push(frame)
            await asyncio.sleep(0.02)
        lane.end_input()

    feeder = asyncio.create_task(feed())
    async for event in lane:
        if isinstance(event, SpeechStarted):
            lane.addressing = False
    await feeder
    finals = [w for w, resource in scheduler.order if resource == "stt" and w < Work.PARTIAL]
    assert finals == [Work.ENDPOINT, Work.ASIDE], scheduler.order
