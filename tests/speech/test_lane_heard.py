"""A lane whose frames are heard on the socket thread (``SpeakerLane.hear``), with the real
Silero VAD and faster-whisper: the VAD runs on the thread that hands the frame over, the loop
only gets speech events, a player whose packets stop still ends their turn, and frames pushed
earlier keep their place."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
import soxr

from bot.audio.speech import (
    FasterWhisperStt,
    FinalTranscript,
    LaneEvent,
    PiperTts,
    SileroVad,
    SpeakerLane,
    SpeechEnded,
    SpeechStarted,
)

from .speech_helpers import heard_as, piper_pcm

pytestmark = pytest.mark.model_verdict

_LINE = "Bartok, please bring us two bowls of hot soup."


def _stt_frames(pcm: bytes, rate: int, *, pad_s: float, tail_s: float | None = None) -> list[bytes]:
    """Mono s16le -> 20 ms 16 kHz mono frames, as the receiver decodes Discord's Opus."""
    samples = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32), rate, 16_000)
    pad = np.zeros(int(pad_s * 16_000), dtype=np.float32)
    tail = pad if tail_s is None else np.zeros(int(tail_s * 16_000), dtype=np.float32)
    audio = np.clip(np.concatenate([pad, samples, tail]), -32768, 32767).astype("<i2")
    audio = np.concatenate([audio, np.zeros((-audio.size) % 320, dtype="<i2")]).tobytes()
    return [audio[i : i + 640] for i in range(0, len(audio), 640)]


class _ThreadNotingVad:
    """The real Silero VAD, noting which threads run it."""

    def __init__(self) -> None:
        self._vad = SileroVad()
        self.window_samples = self._vad.window_samples
        self.windows: dict[str, int] = {}

    def probability(self, window: np.ndarray) -> float:
        name = threading.current_thread().name
        self.windows[name] = self.windows.get(name, 0) + 1
        return self._vad.probability(window)

    def reset(self) -> None:
        self._vad.reset()


def _socket_thread(lane: SpeakerLane, frames: list[bytes], pace_s: float) -> list[bool]:
    taken: list[bool] = []

    def run() -> None:
        for frame in frames:
            taken.append(lane.hear(frame))
            if pace_s:
                time.sleep(pace_s)

    thread = threading.Thread(target=run, name="voice-socket")
    thread.start()
    thread.join()
    return taken


async def _events_until_final(lane: SpeakerLane) -> list[LaneEvent]:
    events: list[LaneEvent] = []
    async with asyncio.timeout(60):
        async for event in lane:
            events.append(event)
            if isinstance(event, FinalTranscript):
                break
    return events


@pytest.mark.parametrize("tail_s", [0.3, 0.0])
async def test_packets_that_stop_still_end_the_turn(
    whisper: FasterWhisperStt, piper: PiperTts, tail_s: float
) -> None:
    """Discord stops sending when the player stops: the lane feeds itself the silence, so the
    turn ends and is transcribed. The VAD ran on the socket thread, but for that silence."""
    pcm, rate = piper_pcm(piper, _LINE)
    frames = _stt_frames(pcm, rate, pad_s=0.3, tail_s=tail_s)
    vad = _ThreadNotingVad()
    lane = SpeakerLane("erin", stt=whisper, vad=vad)
    silent_frames: list[int] = []
    lane.on_silence = silent_frames.append
    reader = asyncio.create_task(_events_until_final(lane))
    taken = await asyncio.to_thread(_socket_thread, lane, frames, 0.02)
    last_packet = time.monotonic()
    events = await reader
    ended = next(e for e in events if isinstance(e, SpeechEnded))
    final = next(e for e in events if isinstance(e, FinalTranscript))
    assert all(taken)
    assert [type(e) for e in events].index(SpeechStarted) == 0
    assert heard_as(_LINE, final.text, 0.2), final.text
    # Ended by the silence the lane fed itself: the last frames carried only 0.3 s of it.
    assert ended.silence_ms >= 400, ended
    # Fed when silence acts, not every 20 ms, and not only when the player speaks again: the
    # turn ends about when that much silence had really passed (a VAD window and a timer's
    # slack on a quiet machine; the bound leaves room for a loaded one, whose timers run late).
    silence_sent_s = len(frames) * 0.02 - ended.stream_time  # after the last voiced audio
    late_s = (ended.wall_time - last_packet) - (ended.silence_ms / 1000 - silence_sent_s)
    assert late_s < 0.5, late_s
    assert sum(silent_frames) >= 5
    # Every window of the audio and of the silence went through the VAD once, most of them on
    # the socket thread. The rest ran on the pump's worker: the silence, and on a loaded
    # machine the frames behind a gap of 0.1 s between two packets (the lane fed silence there
    # too, dropped when the next packet came, and frames queue behind it to keep their order).
    fed = (len(frames) + sum(silent_frames)) * 320
    assert fed // 512 - 1 <= sum(vad.windows.values()) <= fed // 512 + 1, vad.windows
    assert vad.windows.pop("voice-socket") >= len(frames) * 320 // 512 // 2, vad.windows
    await lane.aclose()


async def test_frames_pushed_first_keep_their_place(
    whisper: FasterWhisperStt, piper: PiperTts
) -> None:
    """A player's first frames reach the lane from the loop (which opens it); the rest are
    heard at once, while the loop is busy and has not yet run the pushed ones through the VAD:
    they go first. The utterance is cut exactly as when every frame is pushed."""
    pcm, rate = piper_pcm(piper, _LINE)
    frames = _stt_frames(pcm, rate, pad_s=0.3) + [bytes(640)] * 50

    async def segments(lane: SpeakerLane, pushed: int) -> list[tuple[str, int, float]]:
        for frame in frames[:pushed]:
            lane.push(frame)
        if pushed < len(frames):
            _socket_thread(lane, frames[pushed:], 0.0)  # blocks the loop: a busy loop
        events = await _events_until_final(lane)
        await lane.aclose()
        return [
            (type(e).__name__, e.utterance_id, round(e.stream_time, 3))
            for e in events
            if isinstance(e, SpeechStarted | SpeechEnded)
        ]

    all_pushed = await segments(SpeakerLane("fay", stt=whisper, vad=SileroVad()), len(frames))
    mixed = await segments(SpeakerLane("fay", stt=whisper, vad=SileroVad()), 40)
    assert len(all_pushed) == 2 and mixed == all_pushed


class _BrokenVad:
    window_samples = 512

    def probability(self, window: np.ndarray) -> float:
        raise RuntimeError("the VAD model broke")

    def reset(self) -> None:
        return None


async def test_a_vad_failure_on_the_socket_thread_reaches_the_reader(
    whisper: FasterWhisperStt,
) -> None:
    lane = SpeakerLane("gil", stt=whisper, vad=_BrokenVad())
    # The loop is held meanwhile, as a busy one may be: the lane must refuse audio at once,
    # not once the loop has run its end (CI once saw all 20 frames taken after the failure).
    taken = _socket_thread(lane, [bytes(640)] * 20, 0.0)
    assert taken[:2] == [True, True]  # the socket thread went on after the failing window
    with pytest.raises(RuntimeError, match="the VAD model broke"):
        async with asyncio.timeout(10):
            async for _event in lane:
                pass
    assert not any(taken[-5:])  # an ended lane takes no more
    await lane.aclose()
