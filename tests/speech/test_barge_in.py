"""Barge-in on scripted timelines (real Piper NPC audio) and through a real lane."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path

import numpy as np
import pytest
import soxr

from bot.audio.speech import (
    SILENCE_FRAME,
    BargeIn,
    BargeInController,
    FasterWhisperStt,
    LaneEvent,
    Mixer,
    PartialTranscript,
    PiperTts,
    SpeakerLane,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
    WavSink,
)
from campaigns.basics import AudioChunk

from .speech_helpers import heard_as, pcm_to_frames, piper_pcm

pytestmark = pytest.mark.model_verdict

FIRST = "Welcome to the Prancing Pony."
SECOND = "Our ale is brewed in the cellar by my cousin, who learned it from the monks of the hill."


def npc_handle(mixer: Mixer, piper: PiperTts) -> None:
    handle = mixer.speak("Bartok")
    for sentence in (FIRST, SECOND):
        pcm, rate = piper_pcm(piper, sentence)
        handle.feed(AudioChunk(pcm, rate), text=sentence)
    handle.finish()


def timeline(
    start: int, *, partial: str | None, until_ms: int = 1000
) -> dict[int, list[LaneEvent]]:
    """Scripted lane events by mixer frame index: speech from ``start``, progress every 60 ms."""
    script: dict[int, list[LaneEvent]] = {start: [SpeechStarted("alice", 1, 0.0, 0.0)]}
    for ms in range(60, until_ms, 60):
        script.setdefault(start + ms // 20, []).append(SpeechProgress("alice", 1, ms, 0.0, 0.0))
    if partial is not None:
        script.setdefault(start + 10, []).append(PartialTranscript("alice", 1, partial, 0.0, 0.0))
    script.setdefault(start + until_ms // 20, []).append(SpeechEnded("alice", 1, 0.0, 1.0, 0.0))
    return script


async def test_barge_in_stops_within_one_frame_and_records_only_what_was_heard(
    piper: PiperTts, whisper: FasterWhisperStt, tmp_path: Path
) -> None:
    mixer = Mixer()
    npc_handle(mixer, piper)
    handle = mixer.current
    assert handle is not None
    cut: list[BargeIn] = []
    controller = BargeInController(mixer, on_barge_in=cut.append)
    script = timeline(150, partial="Wait, how much is it?")  # player talks 3 s into the answer
    fired_at: int | None = None
    with WavSink(mixer, tmp_path / "npc.wav") as sink:
        for index in range(400):
            for event in script.get(index, []):
                if controller.observe(event) is not None:
                    fired_at = index
            sink.render(1)
    assert fired_at is not None and len(cut) == 1
    # confirm window 250 ms after speech start at frame 150 -> first progress >= 250 ms
    assert fired_at == 150 + 300 // 20
    with wave.open(str(tmp_path / "npc.wav")) as wav:
        audio = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    frames = audio.reshape(-1, 1920)
    assert np.abs(frames[fired_at - 1]).max() > 0  # still speaking in the frame before
    assert not np.abs(frames[fired_at:]).any()  # and silent from the very next frame
    heard = cut[0].heard
    assert heard.interrupted and heard.npc == "Bartok" and cut[0].speaker == "alice"
    assert heard.played_s == pytest.approx(fired_at * 0.02)
    assert heard.played_text.startswith(FIRST + " Our ale")
    assert len(heard.played_text) < len(FIRST + " " + SECOND) - 20
    # what the record says was said is what the audio says
    mono = soxr.resample(frames[:fired_at].reshape(-1, 2)[:, 0] / 32768.0, 48_000, 16_000)
    spoken = whisper.transcribe_sync(mono.astype(np.float32))
    assert heard_as(heard.played_text, spoken, 0.25), (heard.played_text, spoken)
    assert "monks" not in spoken.lower()


async def test_backchannels_and_blips_do_not_barge_in(piper: PiperTts) -> None:
    mixer = Mixer()
    npc_handle(mixer, piper)
    controller = BargeInController(mixer, backchannel_max_ms=700)
    events = {**timeline(10, partial="Mm-hmm.", until_ms=600)}
    for index in range(60):
        for event in events.get(index, []):
            assert controller.observe(event) is None
        assert mixer.next_frame() != SILENCE_FRAME
    assert not controller.history and mixer.current is not None


async def test_long_speech_without_words_yet_still_barges_in(piper: PiperTts) -> None:
    mixer = Mixer()
    npc_handle(mixer, piper)
    controller = BargeInController(mixer, backchannel_max_ms=700)
    script = timeline(5, partial=None, until_ms=1500)
    mixer.next_frame()
    fired = [i for i in range(100) for e in script.get(i, []) if controller.observe(e)]
    assert fired == [5 + 720 // 20]


async def test_no_barge_in_while_no_npc_is_audible() -> None:
    mixer = Mixer()
    waiting = mixer.speak("Bartok")  # holds the floor, but TTS has produced nothing yet
    controller = BargeInController(mixer)
    for events in timeline(0, partial="Hello there").values():
        for event in events:
            assert controller.observe(event) is None
    assert not waiting.done()


async def test_real_player_speech_cuts_off_a_real_npc(
    piper: PiperTts, whisper: FasterWhisperStt
) -> None:
    mixer = Mixer()
    npc_handle(mixer, piper)
    handle = mixer.current
    assert handle is not None
    cut: list[BargeIn] = []
    controller = BargeInController(mixer, on_barge_in=cut.append)
    lane = SpeakerLane("alice", stt=whisper)
    pcm, rate = piper_pcm(piper, "Hold on, how much does the ale cost?")
    player = [SILENCE_FRAME] * 50 + pcm_to_frames(pcm, rate, pad_s=0.2) + [SILENCE_FRAME] * 50

    async def clock() -> None:  # both directions at 2x real time, frame for frame
        for frame in player:
            lane.push(frame)
            mixer.next_frame()
            await asyncio.sleep(0.01)
        lane.end_input()

    driver = asyncio.create_task(clock())
    async for event in lane:
        controller.observe(event)
    await driver
    assert len(cut) == 1
    result = await asyncio.wait_for(handle.wait(), 1)
    assert result.interrupted and 1.0 < result.played_s < 4.0
    assert result.played_text and len(result.played_text) < len(result.full_text)
