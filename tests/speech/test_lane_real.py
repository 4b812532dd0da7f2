"""SpeakerLane with the real Silero VAD and faster-whisper tiny.en on synthesized player speech."""

from __future__ import annotations

import asyncio

import pytest

from bot.audio.speech import (
    Backchannel,
    FasterWhisperStt,
    FinalTranscript,
    PartialTranscript,
    PiperTts,
    SpeakerLane,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
    Vocabulary,
)
from bot.settings.config import SpeechConfig, VadConfig

from .speech_helpers import (
    heard_as,
    pcm_to_frames,
    piper_pcm,
    run_lane,
    silence_frames,
    wer,
)

pytestmark = pytest.mark.model_verdict


async def test_word_error_rate_over_player_lines(
    whisper: FasterWhisperStt, player_audio: list[tuple[str, bytes, int]]
) -> None:
    lane = SpeakerLane("alice", stt=whisper, vocabulary=Vocabulary(["Bartok"]))
    frames: list[bytes] = []
    for _text, pcm, rate in player_audio:
        frames += pcm_to_frames(pcm, rate, pad_s=0.5)
        frames += silence_frames(0.5)
    events = await asyncio.wait_for(run_lane(lane, frames), timeout=120)
    finals = [e for e in events if isinstance(e, FinalTranscript)]
    assert len(finals) == len(player_audio), [f.text for f in finals]
    pairs = [(text, final.text) for (text, _, _), final in zip(player_audio, finals, strict=True)]
    error_rate = wer(pairs)
    assert error_rate <= 0.10, pairs
    assert [f.utterance_id for f in finals] == sorted(f.utterance_id for f in finals)


async def test_partials_arrive_before_the_final(whisper: FasterWhisperStt, piper: PiperTts) -> None:
    text = "Greymantle, tell me everything you know about the Shadowfell conspiracy."
    pcm, rate = piper_pcm(piper, text)
    lane = SpeakerLane(
        "bob", stt=whisper, vocabulary=Vocabulary(["Greymantle", "Shadowfell", "Bartok"])
    )
    # Paced like a player (real time): a partial is only emitted while the player still talks.
    events = await asyncio.wait_for(
        run_lane(lane, pcm_to_frames(pcm, rate, pad_s=0.6), realtime_factor=1.0), timeout=60
    )
    kinds = [type(e) for e in events if not isinstance(e, SpeechProgress)]
    assert kinds[0] is SpeechStarted
    assert PartialTranscript in kinds
    final_index = kinds.index(FinalTranscript)
    assert kinds.index(PartialTranscript) < kinds.index(SpeechEnded) < final_index
    final = next(e for e in events if isinstance(e, FinalTranscript))
    # Piper samples its prosody with noise: a name may be misheard ("Greymantle" once came
    # back as "Granite all", two word errors), so no single word is asserted.
    assert heard_as(text, final.text, 0.2), final.text
    assert final.wall_time >= final.speech_end_wall_time
    assert 0.5 < final.started_at < 0.9  # onset back-dated to the first voiced window
    progress = [e for e in events if isinstance(e, SpeechProgress)]
    assert progress and progress[-1].voiced_ms > 2000


async def test_one_second_of_silence_splits_two_turns(
    whisper: FasterWhisperStt, player_audio: list[tuple[str, bytes, int]]
) -> None:
    (first, pcm1, rate1), (second, pcm2, rate2) = player_audio[1], player_audio[2]
    frames = pcm_to_frames(pcm1, rate1, pad_s=0.3) + silence_frames(1.0)
    frames += pcm_to_frames(pcm2, rate2, pad_s=0.3)
    lane = SpeakerLane("carol", stt=whisper)
    events = await asyncio.wait_for(run_lane(lane, frames), timeout=60)
    finals = [e for e in events if isinstance(e, FinalTranscript)]
    assert len(finals) == 2
    assert heard_as(first, finals[0].text, 0.15) and heard_as(second, finals[1].text, 0.15)
    assert finals[0].ended_at < finals[1].started_at


async def test_backchannel_is_not_a_turn(whisper: FasterWhisperStt, piper: PiperTts) -> None:
    # Piper cannot hum "mhm" (it spells it out), so use the backchannels it can say.
    frames: list[bytes] = []
    for noise in ("Uh-huh.", "Yeah.", "Okay."):
        pcm, rate = piper_pcm(piper, noise)
        frames += pcm_to_frames(pcm, rate, pad_s=0.5)
    lane = SpeakerLane("dave", stt=whisper)
    events = await asyncio.wait_for(run_lane(lane, frames), timeout=60)
    assert not [e for e in events if isinstance(e, FinalTranscript)], events
    assert len([e for e in events if isinstance(e, Backchannel)]) == 3


async def test_max_utterance_cuts_a_monologue(whisper: FasterWhisperStt, piper: PiperTts) -> None:
    pcm, rate = piper_pcm(piper, "I walk along the long road and I keep on talking and talking.")
    config = SpeechConfig(vad=VadConfig(max_utterance_s=1.5))
    lane = SpeakerLane("erin", stt=whisper, config=config)
    events = await asyncio.wait_for(run_lane(lane, pcm_to_frames(pcm, rate, pad_s=0.3)), 60)
    ends = [e for e in events if isinstance(e, SpeechEnded)]
    assert ends[0].truncated and ends[0].duration_s <= 1.55
    assert len(ends) >= 2


async def test_webrtc_vad_option_segments_speech(
    whisper: FasterWhisperStt, player_audio: list[tuple[str, bytes, int]]
) -> None:
    text, pcm, rate = player_audio[3]
    config = SpeechConfig(vad=VadConfig(provider="webrtc", aggressiveness=3))
    lane = SpeakerLane("fay", stt=whisper, config=config)
    events = await asyncio.wait_for(run_lane(lane, pcm_to_frames(pcm, rate, pad_s=0.5)), 60)
    finals = [e for e in events if isinstance(e, FinalTranscript)]
    assert len(finals) == 1 and heard_as(text, finals[0].text, 0.15)
