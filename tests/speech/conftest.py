"""Real models for the speech tests, loaded once per session."""

from __future__ import annotations

import shutil

import pytest

from bot.audio.speech import FasterWhisperStt, PiperTts

from ..model_variants import optimize_turn_graph
from .speech_helpers import ESPEAK_LINES, PLAYER_LINES, espeak_pcm, piper_pcm


@pytest.fixture(scope="session")
def whisper() -> FasterWhisperStt:
    return FasterWhisperStt()


@pytest.fixture(scope="session")
def piper() -> PiperTts:
    return PiperTts(variation=0.0)  # the same audio every run: recognition results repeat


@pytest.fixture(scope="session")
def player_audio(piper: PiperTts) -> list[tuple[str, bytes, int]]:
    """(text, pcm, rate) of each player line: Piper, plus espeak-ng as a second voice."""
    lines = [(text, *piper_pcm(piper, text)) for text in PLAYER_LINES]
    if shutil.which("espeak-ng"):
        lines += [(text, *espeak_pcm(text)) for text in ESPEAK_LINES]
    return lines


@pytest.fixture(scope="session")
def turn_model():  # type: ignore[no-untyped-def]
    from bot.audio.speech.turn_model import SmartTurnModel

    return SmartTurnModel(optimize=optimize_turn_graph())
