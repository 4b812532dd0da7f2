"""The lines whose real Smart Turn verdict the suite relies on are far from the threshold.

On a second kernel path (the graph unfused) and under perturbations (gain, noise, a shifted
start, more or less silence after the line) each keeps its verdict, with a wide margin on the
paths the suite's variant runs take, so another CPU cannot flip it. A borderline line is tested
with a score the test sets (``ScoredTurnModel``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import soxr

from bot.audio.speech import PiperTts
from bot.audio.speech.turn_model import SmartTurnModel
from campaigns.providers.voices import VoiceSettings

pytestmark = pytest.mark.model_verdict

FINISHED = [
    "Please pour me a pint of your best ale.",  # test_turn_end_real: ends after complete_ms
    "We should sell the old sword at the market.",  # the breath before a second sentence
    "Bartok, what's on tap tonight?",  # glyphoxa doctor's sample line
    "Greymantle.",  # a name alone: the words hold the turn, the sound says finished
]
UNFINISHED = ["I was thinking that maybe we could"]
MARGIN = 0.25
"""How far beyond ``speech.turn.threshold`` (0.5) a line stays on the paths the suite runs."""

Variant = Callable[[np.ndarray], np.ndarray]
_PAUSE = 2400  # 0.15 s at 16 kHz: the pause the lane judges


def _silence(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.float32)


VARIANTS: dict[str, tuple[Variant, float]] = {
    # what the child test runs do to every line (tests/model_variants.py): a wide margin
    "as is": (lambda a: a, MARGIN),
    "half gain": (lambda a: a * 0.5, MARGIN),
    "1.8 x gain, clipped": (lambda a: np.clip(a * 1.8, -1.0, 1.0), MARGIN),
    "noise at -50 dBFS": (lambda a: a + _noise(a, -50), MARGIN),
    "10 ms later": (lambda a: np.concatenate([_silence(160), a]), MARGIN),
    # harsher than any test feeds the model: the verdict only has to hold
    "noise at -40 dBFS": (lambda a: a + _noise(a, -40), 0.0),
    "pause 0.05 s": (lambda a: a[: a.size - 1600], 0.0),
    "pause 0.25 s": (lambda a: np.concatenate([a, _silence(1600)]), 0.0),
}


def _noise(audio: np.ndarray, dbfs: float) -> np.ndarray:
    rng = np.random.default_rng(11)  # the same noise every run
    return rng.normal(0, 10 ** (dbfs / 20), audio.size).astype(np.float32)


@pytest.fixture(scope="module")
def kernels() -> dict[str, SmartTurnModel]:
    return {"fused": SmartTurnModel(), "unfused": SmartTurnModel(optimize=False)}


def _line(piper: PiperTts, text: str) -> np.ndarray:
    """The line as Piper says it: this test perturbs it itself, whatever the run's variant."""
    chunks = list(piper._chunks(text, VoiceSettings()))
    pcm, rate = b"".join(c.pcm for c in chunks), chunks[0].sample_rate
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    samples = soxr.resample(samples, rate, 16_000).astype(np.float32)
    loud = np.nonzero(np.abs(samples) > 500 / 32768)[0]
    return np.concatenate([samples[loud[0] : loud[-1] + 1], _silence(_PAUSE)])


def _scores(models: dict[str, SmartTurnModel], audio: np.ndarray) -> dict[str, tuple[float, float]]:
    """(score, margin it needs) per kernel path and variant."""
    return {
        f"{kernel}, {name}": (model.probability(change(audio)), margin)
        for kernel, model in models.items()
        for name, (change, margin) in VARIANTS.items()
    }


@pytest.mark.parametrize("text", FINISHED)
def test_a_finished_line_sounds_finished_on_every_path(
    piper: PiperTts, kernels: dict[str, SmartTurnModel], text: str
) -> None:
    scores = _scores(kernels, _line(piper, text))
    low = {k: round(v, 3) for k, (v, margin) in scores.items() if v < 0.5 + margin}
    assert not low, low


@pytest.mark.parametrize("text", UNFINISHED)
def test_an_unfinished_line_sounds_unfinished_on_every_path(
    piper: PiperTts, kernels: dict[str, SmartTurnModel], text: str
) -> None:
    scores = _scores(kernels, _line(piper, text))
    high = {k: round(v, 3) for k, (v, margin) in scores.items() if v > 0.5 - margin}
    assert not high, high


def test_the_paths_really_differ(piper: PiperTts, kernels: dict[str, SmartTurnModel]) -> None:
    """The unfused graph is a second kernel path, not the same arithmetic twice."""
    audio = _line(piper, "Bartok, is it raining outside?")
    fused, unfused = (kernels[k].probability(audio) for k in ("fused", "unfused"))
    assert fused != unfused, fused
