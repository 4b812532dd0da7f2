"""``SpeakerLane.set_vocabulary``: an open lane learns new names (an NPC added or renamed)."""

from __future__ import annotations

import numpy as np

from bot.audio.speech import FinalTranscript, SpeakerLane, Vocabulary

from .speech_helpers import EnergyVad, pcm_to_frames, run_lane, silence_frames, tone_pcm


class _MishearingStt:
    """Always hears the new alias a little wrong; records the vocabulary of each final."""

    def __init__(self) -> None:
        self.prompts: list[Vocabulary | None] = []

    async def transcribe(
        self, audio: np.ndarray, *, partial: bool = False, vocabulary: Vocabulary | None = None
    ) -> str:
        if not partial:
            self.prompts.append(vocabulary)
        return "Stumpie, one more."


def _utterance() -> list[bytes]:
    return pcm_to_frames(tone_pcm(), 48_000) + silence_frames(1.0)


async def test_a_swapped_vocabulary_prompts_and_corrects_the_next_final() -> None:
    stt = _MishearingStt()
    old, new = Vocabulary(["Bartok"]), Vocabulary(["Bartok", "Stumpy"])
    lane = SpeakerLane("arin", stt=stt, vad=EnergyVad(), vocabulary=old)
    assert lane.vocabulary is old
    lane.set_vocabulary(new)
    assert lane.vocabulary is new
    finals = [e for e in await run_lane(lane, _utterance()) if isinstance(e, FinalTranscript)]
    assert [f.text for f in finals] == ["Stumpy, one more."]
    assert stt.prompts == [new]
