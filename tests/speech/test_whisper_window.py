"""Whisper over a shorter window (opt-in ``window_s``): it still hears the lines, and a decoder
loop is heard again over the full window."""

from __future__ import annotations

import numpy as np
import soxr

from bot.speech import FasterWhisperStt, PiperTts, Vocabulary
from bot.speech.stt_whisper import _repeats_itself

from .speech_helpers import PLAYER_LINES, piper_pcm, wer


def _clips(piper: PiperTts) -> list[np.ndarray]:
    audio = []
    for text in PLAYER_LINES[:6]:
        pcm, rate = piper_pcm(piper, text)
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
        audio.append(soxr.resample(samples, rate, 16_000).astype(np.float32))
    return audio


def test_a_decoder_loop_is_recognised() -> None:
    assert _repeats_itself("Where can we buy some rope? Where can we buy some rope?")
    assert _repeats_itself("Who owns the ship. who owns  the ship.")
    assert not _repeats_itself("Where can we buy some rope?")
    assert not _repeats_itself("Yes. Yes, please.")


def test_short_turns_are_still_heard_over_a_shorter_window(piper: PiperTts) -> None:
    vocabulary = Vocabulary(["Bartok"], names=["Bartok"])
    audio = _clips(piper)
    heard = {}
    for window in (15.0, 30.0):
        stt = FasterWhisperStt(window_s=window)
        try:
            heard[window] = [stt.transcribe_sync(a, False, vocabulary) for a in audio]
        finally:
            stt.close()
    short = wer(zip(PLAYER_LINES[:6], heard[15.0], strict=True))
    full = wer(zip(PLAYER_LINES[:6], heard[30.0], strict=True))
    assert full <= 0.1 and short <= 0.2, (heard[15.0], heard[30.0])


def test_partials_use_the_shorter_partial_window_and_finals_the_full_one(piper: PiperTts) -> None:
    """Partials run back to back while a player talks, and the turn's final waits behind the one
    in flight: they are encoded over 10 s (2.6x cheaper), finals over Whisper's full 30 s."""
    vocabulary = Vocabulary(["Bartok"], names=["Bartok"])
    audio = _clips(piper)
    stt = FasterWhisperStt()
    try:
        partials, windows = [], set()
        for clip in audio:
            partials.append(stt.transcribe_sync(clip, True, vocabulary))
            windows.add(stt._model.window_frames)
        assert windows == {1000}
        stt.transcribe_sync(audio[0], False, vocabulary)
        assert stt._model.window_frames == 3000
        long_clip = np.concatenate([audio[0], np.zeros(16_000 * 10, np.float32)])
        stt.transcribe_sync(long_clip, True, vocabulary)
        assert stt._model.window_frames == 3000  # too long for the partial window
    finally:
        stt.close()
    assert wer(zip(PLAYER_LINES[:6], partials, strict=True)) <= 0.2, partials
