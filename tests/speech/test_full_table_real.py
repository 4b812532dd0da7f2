"""A full table on the real models: several players talk at once through lanes that share one
CPU scheduler (as a table's do); nobody's turn is lost."""

from __future__ import annotations

import asyncio

import pytest

from bot.audio.speech import (
    FasterWhisperStt,
    FinalTranscript,
    PartialTranscript,
    PiperTts,
    SpeakerLane,
    Vocabulary,
)
from bot.audio.speech.scheduler import CpuScheduler, Work
from bot.audio.speech.turn_model import SmartTurnModel

from .speech_helpers import heard_as, piper_pcm, stt_frames, stt_silence

pytestmark = [pytest.mark.slow, pytest.mark.model_verdict]


async def test_each_lane_gets_its_final_while_everyone_talks(
    whisper: FasterWhisperStt, piper: PiperTts, turn_model: SmartTurnModel
) -> None:
    scheduler = CpuScheduler()
    said = {
        "arin": ["Bartok, what is on tap tonight?"],
        "tobble": ["I think we should count our coins first.", "Then we can order more."],
        "mira": ["We have plenty left from the sword we sold.", "Stop worrying so much."],
    }
    names = ["Bartok"]
    lanes = {
        who: SpeakerLane(who, stt=whisper, vocabulary=Vocabulary(names, names=names),
                         turn_model=turn_model, scheduler=scheduler)
        for who in said
    }  # fmt: skip
    frames: dict[str, list[bytes]] = {}
    for who, lines in said.items():
        frames[who] = stt_silence(0.2)
        for text in lines:
            frames[who] += stt_frames(*piper_pcm(piper, text)) + stt_silence(1.3)

    async def feed() -> None:  # everyone at once, in real time
        for index in range(max(len(f) for f in frames.values())):
            for who, lane in lanes.items():
                if index < len(frames[who]):
                    lane.push(frames[who][index])
            await asyncio.sleep(0.02)
        for lane in lanes.values():
            lane.end_input()

    async def finals(lane: SpeakerLane) -> list[str]:
        texts = []
        async for event in lane:
            if isinstance(event, PartialTranscript) and lane.speaker != "arin":
                lane.addressing = False  # as the table decides: talking among themselves
            elif isinstance(event, FinalTranscript):
                texts.append(event.text)
        return texts

    feeder = asyncio.create_task(feed())
    results = await asyncio.gather(*(finals(lane) for lane in lanes.values()))
    heard = dict(zip(lanes, results, strict=True))
    await feeder
    for who, lines in said.items():
        assert len(heard[who]) == len(lines), (who, heard[who])
        for text, final in zip(lines, heard[who], strict=True):
            assert heard_as(text, final, 0.25), (who, text, final)
    assert scheduler.stats[Work.ENDPOINT].ran >= 5  # every turn's end went first
    assert not scheduler.busy_with(Work.CHATTER)  # nothing left holding a slot
