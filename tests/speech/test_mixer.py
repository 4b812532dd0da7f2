"""Mixer: frame contract, floor control queueing, played-text records, ambience and sinks."""

from __future__ import annotations

import asyncio
import threading
import wave
from pathlib import Path

import numpy as np
import pytest

from bot.audio.speech import (
    FRAME_BYTES,
    SILENCE_FRAME,
    HandleState,
    Mixer,
    WavSink,
    decode_audio_file,
)
from campaigns.basics import AudioChunk, GlyphoxaError


def tone(seconds: float, rate: int = 24_000, freq: float = 440.0, level: float = 0.3) -> AudioChunk:
    t = np.arange(int(seconds * rate)) / rate
    pcm = (np.sin(2 * np.pi * freq * t) * level * 32767).astype("<i2").tobytes()
    return AudioChunk(pcm, rate)


def frame_level(frame: bytes) -> float:
    return float(np.abs(np.frombuffer(frame, dtype="<i2")).mean())


async def test_one_npc_holds_the_floor_and_the_next_queues() -> None:
    mixer = Mixer()
    bartok = mixer.speak("Bartok")
    sage = mixer.speak("Greymantle")
    assert mixer.current is bartok and mixer.queued == [sage]
    assert bartok.state is HandleState.PLAYING and sage.state is HandleState.QUEUED
    sage.feed(tone(0.2, freq=880), text="Hmm.")  # pre-buffered while waiting
    sage.finish()
    bartok.feed(tone(0.3), text="Welcome in.")
    assert mixer.next_frame() != SILENCE_FRAME
    assert bartok.playback_started_at is not None and sage.playback_started_at is None
    bartok.finish()
    frames = [mixer.next_frame() for _ in range(40)]
    assert all(len(f) == FRAME_BYTES for f in frames)
    first = await asyncio.wait_for(bartok.wait(), 1)
    second = await asyncio.wait_for(sage.wait(), 1)
    assert first.played_text == "Welcome in." and not first.interrupted
    assert second.played_text == "Hmm." and second.played_s == pytest.approx(0.2, abs=0.03)
    assert not mixer.busy and mixer.next_frame() == SILENCE_FRAME


async def test_underrun_is_silence_and_holds_the_floor() -> None:
    mixer = Mixer()
    handle = mixer.speak("Bartok")
    assert mixer.starved and mixer.next_frame() == SILENCE_FRAME
    assert handle.playback_started_at is None and mixer.current is handle
    assert not await asyncio.wait_for(asyncio.shield(_started_or_timeout(handle)), 0.5)
    handle.feed(tone(0.1), text="Ah.")
    handle.finish()
    assert mixer.next_frame() != SILENCE_FRAME and await handle.wait_started()


async def _started_or_timeout(handle) -> bool:  # type: ignore[no-untyped-def]
    try:
        return await asyncio.wait_for(handle.wait_started(), 0.1)
    except TimeoutError:
        return False


async def test_cancel_stops_within_one_frame_and_records_what_was_heard() -> None:
    mixer = Mixer()
    handle = mixer.speak("Bartok")
    handle.feed(tone(1.0), text="One two three four five six seven eight nine ten.")
    handle.feed(tone(1.0), text="This sentence is never heard.")
    handle.finish()
    for _ in range(25):  # 0.5 s: half of the first sentence
        assert frame_level(mixer.next_frame()) > 1000
    handle.cancel()
    assert mixer.next_frame() == SILENCE_FRAME
    result = await handle.wait()
    assert result.interrupted
    assert result.played_text == "One two three four five"
    assert result.full_text.endswith("never heard.")


async def test_next_frame_is_safe_from_a_pull_thread() -> None:
    mixer = Mixer()
    frames: list[bytes] = []
    stop = threading.Event()

    def pull() -> None:
        while not stop.wait(0.001):
            frames.append(mixer.next_frame())

    thread = threading.Thread(target=pull)
    thread.start()
    for _ in range(20):
        handle = mixer.speak("Bartok")
        handle.feed(tone(0.05), text="Hi.")
        handle.finish()
        await asyncio.wait_for(handle.wait(), 5)
    stop.set()
    thread.join()
    assert all(len(f) == FRAME_BYTES for f in frames)


def write_wav(path: Path, seconds: float, rate: int = 44_100, channels: int = 1) -> None:
    t = np.arange(int(seconds * rate)) / rate
    mono = (np.sin(2 * np.pi * 220 * t) * 0.5 * 32767).astype("<i2")
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(np.repeat(mono, channels).tobytes())


async def test_ambience_loops_under_speech_and_ducks(tmp_path: Path) -> None:
    path = tmp_path / "tavern.wav"
    write_wav(path, 0.5)
    mixer = Mixer()
    await mixer.ambience.play(path, "tavern")
    assert mixer.ambience.now_playing == (path, "tavern")
    quiet = [frame_level(mixer.next_frame()) for _ in range(40)]  # loops past 0.5 s
    assert min(quiet[5:]) > 500
    handle = mixer.speak("Bartok")
    handle.feed(AudioChunk(bytes(48_000), 24_000), text="...")  # silent voice: hear the duck
    mixer.next_frame()
    ducked = frame_level(mixer.next_frame())
    assert ducked == pytest.approx(np.mean(quiet[5:]) * 0.4, rel=0.15)
    voice = mixer.last_voice_frame()  # the voice alone: (nearly) silent, no ambience
    assert voice is not None and len(voice) == 3840 and frame_level(voice) < 5
    mixer.ambience.stop()
    handle.cancel()
    assert mixer.next_frame() == SILENCE_FRAME
    assert mixer.last_voice_frame() is None


async def test_ambience_decodes_other_formats_with_pyav(tmp_path: Path) -> None:
    import av

    path = tmp_path / "wind.flac"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("flac", rate=22_050, layout="mono")
        samples = (np.sin(np.arange(22_050) / 10) * 8000).astype(np.int16)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = 22_050
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    track = decode_audio_file(path)
    assert track.shape[1] == 2 and abs(track.shape[0] - 48_000) < 2000
    with pytest.raises(GlyphoxaError, match="not found"):
        decode_audio_file(tmp_path / "missing.ogg")
    (tmp_path / "junk.mp3").write_bytes(b"not audio at all")
    with pytest.raises(GlyphoxaError, match="cannot decode"):
        decode_audio_file(tmp_path / "junk.mp3")


async def test_wav_sink_renders_and_drains(tmp_path: Path) -> None:
    mixer = Mixer()
    out = tmp_path / "out.wav"
    with WavSink(mixer, out) as sink:
        sink.render(5)
        handle = mixer.speak("Bartok")

        async def produce() -> None:
            for _ in range(3):
                await asyncio.sleep(0.02)  # TTS slower than rendering: drain must wait
                handle.feed(tone(0.2), text="Word.")
            handle.finish()

        producer = asyncio.create_task(produce())
        written = await asyncio.wait_for(sink.drain(), 5)
        await producer
        assert written == 30
    with wave.open(str(out)) as wav:
        assert wav.getframerate() == 48_000 and wav.getnchannels() == 2
        assert wav.getnframes() == 35 * 960


async def test_wav_sink_clock_pulls_in_real_time(tmp_path: Path) -> None:
    mixer = Mixer()
    sink = WavSink(mixer, tmp_path / "clock.wav")
    sink.start()
    await asyncio.sleep(0.3)
    sink.close()
    assert 8 <= sink.frames_written <= 22


async def test_a_caption_names_audio_fed_without_text_and_counts_what_was_heard() -> None:
    mixer = Mixer()
    handle = mixer.speak("Whisper")
    handle.caption("one two three")  # a running transcript may arrive before its audio
    handle.feed(AudioChunk(b"\x01\x00" * 24_000, 24_000))  # 1 s
    handle.caption("one two three four five six seven eight nine ten")  # ... and grow
    for _ in range(26):  # a little over half a second is heard
        mixer.next_frame()
    handle.cancel()
    heard = handle.played_text.split()
    assert heard == "one two three four five".split()
