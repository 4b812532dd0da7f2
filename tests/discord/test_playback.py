"""Playback sends the real mixer's audio only while there is audio, as a Discord client does.

The wire is a recorder standing in for discord.py's packet path (the Discord side is tested
against the local Discord in ``test_idle_voice.py``); the mixer, its handles and the playback
thread are the production ones.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from bot.audio.speech import Mixer
from bot.audio.voice.dave import OPUS_SILENCE
from bot.audio.voice.playback import FRAME_BYTES, TRAILING_SILENCE_FRAMES, Playback
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import AudioChunk

_RATE = 48_000


class Wire:
    """Records what playback sends: ``begin``/``end`` (the speaking flag) and each frame."""

    def __init__(self) -> None:
        self.log: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self.changed = threading.Event()
        self.up = threading.Event()
        self.up.set()

    def connected(self) -> bool:
        return self.up.is_set()

    def wait_connected(self, timeout: float) -> bool:
        return self.up.wait(timeout)

    def begin(self) -> None:
        self._add("begin", b"")

    def send(self, data: bytes, *, encode: bool) -> None:
        self._add("pcm" if encode else "opus", data)

    def end(self) -> None:
        self._add("end", b"")

    def _add(self, kind: str, data: bytes) -> None:
        with self._lock:
            self.log.append((kind, data))
        self.changed.set()

    def kinds(self) -> list[str]:
        with self._lock:
            return [kind for kind, _ in self.log]

    async def until(self, kind: str, count: int = 1, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.kinds().count(kind) < count:
            self.changed.clear()
            if self.kinds().count(kind) >= count:
                return
            left = deadline - time.monotonic()
            assert left > 0, f"no {count} x {kind!r} in {timeout_s} s: {self.summary()}"
            await asyncio.to_thread(self.changed.wait, min(left, 0.5))

    def summary(self) -> list[tuple[str, int]]:
        """Runs of the same kind: [("begin", 1), ("pcm", 25), ("opus", 5), ("end", 1)]."""
        runs: list[tuple[str, int]] = []
        for kind in self.kinds():
            if runs and runs[-1][0] == kind:
                runs[-1] = (kind, runs[-1][1] + 1)
            else:
                runs.append((kind, 1))
        return runs


def _tone(seconds: float) -> AudioChunk:
    t = np.arange(int(seconds * _RATE)) / _RATE
    samples = (8000 * np.sin(2 * np.pi * 330 * t)).astype("<i2")
    return AudioChunk(samples.tobytes(), _RATE)


@pytest.fixture
async def rig() -> AsyncIterator[tuple[Mixer, Wire, Playback]]:
    mixer, wire = Mixer(GlyphoxaConfig().speech), Wire()
    playback = Playback(mixer, wire, name="test-playback")
    playback.start()
    try:
        yield mixer, wire, playback
    finally:
        await playback.stop()


async def test_an_idle_mixer_sends_nothing_and_a_line_is_one_utterance(
    rig: tuple[Mixer, Wire, Playback],
) -> None:
    mixer, wire, playback = rig
    await asyncio.sleep(0.3)
    assert wire.log == []  # idle: no frames, no speaking flag
    handle = mixer.speak("Bartok")
    handle.feed(_tone(0.5), text="Welcome, traveller.")
    handle.finish()
    await wire.until("end")
    summary = wire.summary()
    assert summary[0] == ("begin", 1) and summary[-1] == ("end", 1)
    assert summary[-2] == ("opus", TRAILING_SILENCE_FRAMES)  # as a Discord client ends
    assert [kind for kind, _ in summary] == ["begin", "pcm", "opus", "end"]
    assert summary[1][1] == 25  # 0.5 s: every frame of the line, nothing more
    assert all(data == OPUS_SILENCE for kind, data in wire.log if kind == "opus")
    assert all(len(data) == FRAME_BYTES for kind, data in wire.log if kind == "pcm")
    assert (await asyncio.wait_for(handle.wait(), 5)).played_s > 0.4
    sent = len(wire.log)
    await asyncio.sleep(0.5)
    assert len(wire.log) == sent and playback.utterances == 1 and not playback.talking


async def test_a_gap_inside_speech_stays_one_utterance_and_a_pause_after_it_ends_it(
    rig: tuple[Mixer, Wire, Playback],
) -> None:
    """The TTS running behind mid-answer is silence inside the utterance; the next answer after
    the floor was free is a new utterance with its own speaking flag."""
    mixer, wire, playback = rig
    handle = mixer.speak("Bartok")
    handle.feed(_tone(0.2), text="One.")
    await wire.until("pcm", 10)
    await asyncio.sleep(0.3)  # the second sentence comes late
    handle.feed(_tone(0.2), text="Two.")
    handle.finish()
    await wire.until("end")
    kinds = [kind for kind, _ in wire.summary()]
    assert kinds == ["begin", "pcm", "opus", "end"] and playback.utterances == 1
    assert wire.kinds().count("pcm") >= 20 + 10  # both sentences and the gap, as silence
    second = mixer.speak("Greymantle")
    second.feed(_tone(0.1), text="Three.")
    second.finish()
    await wire.until("end", 2)
    assert playback.utterances == 2 and wire.kinds().count("begin") == 2


async def test_barge_in_ends_the_utterance_at_once(rig: tuple[Mixer, Wire, Playback]) -> None:
    mixer, wire, _playback = rig
    handle = mixer.speak("Bartok")
    handle.feed(_tone(5.0), text="A very long story.")
    await wire.until("pcm", 5)
    handle.cancel()  # a player barges in
    await wire.until("end")
    after_cancel = wire.kinds()[wire.kinds().index("pcm") :]
    assert after_cancel.count("pcm") < 100  # far from the 250 frames of the whole story
    assert wire.summary()[-2] == ("opus", TRAILING_SILENCE_FRAMES)


async def test_ambience_and_cues_wake_playback(rig: tuple[Mixer, Wire, Playback]) -> None:
    mixer, wire, _playback = rig
    mixer.play_cue(np.full(960 * 3, 4000, dtype=np.int16))  # a DM command's acknowledgement
    await wire.until("end")
    assert [kind for kind, _ in wire.summary()] == ["begin", "pcm", "opus", "end"]
    track = np.full((_RATE, 2), 3000, dtype=np.int16)
    mixer.ambience.set_track(track, Path("tavern.ogg"), "calm")
    await wire.until("begin", 2)
    await wire.until("pcm", wire.kinds().count("pcm") + 25)  # it keeps playing
    mixer.ambience.stop()
    await wire.until("end", 2)


async def test_a_reconnect_holds_the_audio_and_flags_speaking_again(
    rig: tuple[Mixer, Wire, Playback],
) -> None:
    mixer, wire, _playback = rig
    handle = mixer.speak("Bartok")
    handle.feed(_tone(1.0), text="Hold on.")
    await wire.until("pcm", 5)
    wire.up.clear()  # the voice server moves
    await asyncio.sleep(0.2)
    sent = wire.kinds().count("pcm")
    await asyncio.sleep(0.2)
    assert wire.kinds().count("pcm") <= sent + 1  # nothing goes out while down
    wire.up.set()
    handle.finish()
    await wire.until("end")
    assert wire.kinds().count("begin") == 2  # the flag again on the new connection
    assert wire.kinds().count("pcm") == 50  # not a frame lost


async def test_stop_ends_the_utterance_and_a_failing_mixer_sends_nothing() -> None:
    class Broken:
        mid_utterance = False

        def pull_audio(self) -> bytes | None:
            raise RuntimeError("mixer broke")

        def add_listener(self, callback: object) -> None:
            del callback

        def remove_listener(self, callback: object) -> None:
            del callback

    wire = Wire()
    playback = Playback(Broken(), wire)
    playback.start()
    await asyncio.sleep(1.2)  # the idle check pulls once a second
    await playback.stop()
    assert wire.log == [] and playback.failures >= 1

    mixer = Mixer(GlyphoxaConfig().speech)
    playback = Playback(mixer, wire)
    playback.start()
    handle = mixer.speak("Bartok")
    handle.feed(_tone(5.0), text="Interrupted by the end of the session.")
    await wire.until("pcm", 5)
    await playback.stop()
    assert wire.summary()[-2:] == [("opus", TRAILING_SILENCE_FRAMES), ("end", 1)]
    assert not playback.talking
