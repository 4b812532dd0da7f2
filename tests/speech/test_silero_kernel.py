"""Silero on the numpy kernel: onnxruntime's probabilities at half the CPU, or not at all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soxr

from bot.audio.speech import PiperTts
from bot.audio.speech.onnx_weights import float_initializers
from bot.audio.speech.silero_kernel import SileroWeights
from bot.audio.speech.turn_model import smart_turn_dir
from bot.audio.speech.vad import SileroVad, create_vad, silero_model_path
from bot.settings.config import VadConfig
from campaigns.basics import GlyphoxaError
from campaigns.providers.voices import VoiceSettings

from .speech_helpers import piper_pcm


def _line(piper: PiperTts) -> np.ndarray:
    """A low spoken line between noise and digital silence, at 16 kHz."""
    pcm, rate = piper_pcm(
        piper, "Bartok, what's on tap tonight? And the stew?", VoiceSettings(pitch_shift=-3)
    )
    speech = soxr.resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768, rate, 16000)
    noise = np.random.default_rng(3).standard_normal(8000).astype(np.float32) * 0.02
    return np.concatenate([noise, 0.5 * speech.astype(np.float32), np.zeros(8000), noise])


def test_the_numpy_kernel_gives_onnxruntime_probabilities_on_speech(piper: PiperTts) -> None:
    audio = _line(piper).astype(np.float32)
    mine, reference = SileroVad(engine="numpy"), SileroVad(engine="onnxruntime")
    assert (mine.engine, reference.engine) == ("numpy", "onnxruntime")
    windows = [audio[i : i + 512] for i in range(0, audio.size - 511, 512)]
    ours = np.array([mine.probability(w) for w in windows])
    theirs = np.array([reference.probability(w) for w in windows])
    assert np.abs(ours - theirs).max() < 1e-5
    assert (theirs > 0.5).sum() > 20 and (theirs < 0.1).sum() > 20  # the line spans both
    # reset() starts both from a fresh state again, and they still agree
    mine.reset()
    reference.reset()
    assert abs(mine.probability(windows[40]) - reference.probability(windows[40])) < 1e-5


def test_the_configured_engine_is_the_one_that_runs() -> None:
    assert SileroVad(engine="onnxruntime").engine == "onnxruntime"
    vad = create_vad(VadConfig(engine="numpy"))
    assert isinstance(vad, SileroVad) and vad.engine == "numpy"
    chosen = create_vad(VadConfig())
    assert isinstance(chosen, SileroVad) and chosen.engine in ("numpy", "onnxruntime")
    assert "onnxruntime" in chosen.engine_note  # what the check measured, for doctor and logs


def test_every_weight_is_read_from_the_onnx_file() -> None:
    tensors = float_initializers(silero_model_path())
    assert tensors["encoder.conv_layers.0.weight"].shape == (128, 129, 3)
    assert tensors["onnx::LSTM_211"].shape == (1, 1024)
    assert all(t.dtype == np.float32 and np.isfinite(t).all() for t in tensors.values())


def test_another_model_is_refused_by_name() -> None:
    other = smart_turn_dir() / "data" / "smart-turn-v3.2-cpu.onnx"
    with pytest.raises(GlyphoxaError, match="is not Silero VAD v6: encoder"):
        SileroWeights.load(str(other))


def test_a_truncated_or_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    truncated = tmp_path / "silero.onnx"
    truncated.write_bytes(silero_model_path().read_bytes()[:5000])
    with pytest.raises(GlyphoxaError, match=r"cannot read the ONNX weights.*truncated"):
        float_initializers(truncated)
    foreign = tmp_path / "notes.onnx"
    foreign.write_text("these are my session notes, not a model\n")
    with pytest.raises(GlyphoxaError, match="cannot read the ONNX weights"):
        float_initializers(foreign)


def test_a_model_whose_stft_is_not_a_windowed_dft_is_refused(tmp_path: Path) -> None:
    """The kernel computes the STFT as an FFT: a basis of the right shape but other values
    (a retrained or altered front end) must not be run as if it were Silero's."""
    data = silero_model_path().read_bytes()
    basis = float_initializers(silero_model_path())[
        "encoder.feature_extractor.forward_basis_buffer"
    ]
    raw = basis.tobytes()
    assert data.count(raw) == 1
    altered = tmp_path / "altered_silero.onnx"
    noise = np.random.default_rng(5).standard_normal(basis.shape) * 0.01
    altered.write_bytes(data.replace(raw, (basis + noise).astype(np.float32).tobytes()))
    with pytest.raises(GlyphoxaError, match="its STFT is not a windowed DFT"):
        SileroWeights.load(str(altered))
    with pytest.raises(GlyphoxaError, match="its STFT is not a windowed DFT"):
        SileroVad(altered, engine="numpy")
    assert SileroVad(altered).engine == "onnxruntime"  # auto keeps the model on onnxruntime
