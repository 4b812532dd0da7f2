"""Silero VAD v6 in numpy: the arithmetic of its ONNX graph, at half onnxruntime's CPU.

Silero was over half of a speaking player's receive + lane CPU. onnxruntime spends about 90 us
per 32 ms window, mostly dispatching twenty nodes over tensors of a few hundred floats; the same
0.7 M multiply-adds as six BLAS calls into preallocated buffers take about 45 us. The graph
(faster-whisper's ``silero_vad_v6.onnx``): 64 samples of context before the 512-sample window,
reflect-padded, an STFT as a 256-tap convolution with stride 128 (frames 1-4 of 5 are kept),
the magnitude, four 3-tap convolutions with ReLU (strides 1, 2, 2, 1), one LSTM step (gates in
ONNX order i, o, f, c), ReLU, a 1x1 convolution and a sigmoid. :mod:`bot.speech.vad` checks
this kernel against onnxruntime whenever it loads and keeps onnxruntime if they differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from bot.speech.onnx_weights import float_initializers
from campaigns.errors import GlyphoxaError

__all__ = ["SileroKernel", "SileroWeights"]

_F32 = np.float32
_WINDOW, _CONTEXT, _HOP, _FRAME = 512, 64, 128, 256
_SHAPES = {
    "encoder.feature_extractor.forward_basis_buffer": (258, 1, 256),
    "encoder.conv_layers.0.weight": (128, 129, 3),
    "encoder.conv_layers.0.bias": (128,),
    "encoder.conv_layers.1.weight": (64, 128, 3),
    "encoder.conv_layers.1.bias": (64,),
    "encoder.conv_layers.2.weight": (64, 64, 3),
    "encoder.conv_layers.2.bias": (64,),
    "encoder.conv_layers.3.weight": (128, 64, 3),
    "encoder.conv_layers.3.bias": (128,),
    "onnx::LSTM_209": (1, 512, 128),
    "onnx::LSTM_210": (1, 512, 128),
    "onnx::LSTM_211": (1, 1024),
    "decoder.conv1d.weight": (1, 128, 1),
    "decoder.conv1d.bias": (1,),
}


def _taps(weight: np.ndarray) -> np.ndarray:
    """(out, in, 3) -> (3 * in, out): row ``tap * in + channel`` meets a flattened window."""
    return np.ascontiguousarray(weight.transpose(2, 1, 0).reshape(-1, weight.shape[0]))


@dataclass(frozen=True, slots=True)
class SileroWeights:
    """The model's tensors, laid out for the kernel's matrix products (shared by all lanes)."""

    stft: np.ndarray  # (256, 258): real parts, then imaginary
    convs: tuple[tuple[np.ndarray, np.ndarray], ...]  # (taps, bias) per layer
    lstm: np.ndarray  # (256, 512): [input | hidden] -> gates
    lstm_bias: np.ndarray
    out: np.ndarray
    out_bias: float

    @staticmethod
    @cache
    def load(path: str) -> SileroWeights:
        tensors = float_initializers(path)
        for name, shape in _SHAPES.items():
            found = tensors.get(name)
            if found is None or found.shape != shape:
                got = "missing" if found is None else f"shaped {found.shape}"
                raise GlyphoxaError(f"{Path(path).name} is not Silero VAD v6: {name} is {got}")
        convs = tuple(
            (_taps(tensors[f"encoder.conv_layers.{i}.weight"]),
             tensors[f"encoder.conv_layers.{i}.bias"].astype(_F32))
            for i in range(4)
        )  # fmt: skip
        last_taps, last_bias = convs[3]
        # The last layer sees one frame between two pads: only its middle tap meets audio.
        convs = (*convs[:3], (np.ascontiguousarray(last_taps[64:128]), last_bias))
        inputs, hidden = tensors["onnx::LSTM_209"][0], tensors["onnx::LSTM_210"][0]
        bias = tensors["onnx::LSTM_211"][0]
        basis = tensors["encoder.feature_extractor.forward_basis_buffer"][:, 0]
        return SileroWeights(
            stft=np.ascontiguousarray(basis.T),
            convs=convs,
            lstm=np.ascontiguousarray(np.concatenate([inputs, hidden], axis=1).T),
            lstm_bias=(bias[:512] + bias[512:]).astype(_F32),
            out=tensors["decoder.conv1d.weight"][0, :, 0].copy(),
            out_bias=float(tensors["decoder.conv1d.bias"][0]),
        )  # fmt: skip


def _view(buffer: np.ndarray, shape: tuple[int, int], row_step: int, start: int = 0) -> np.ndarray:
    """Overlapping rows of ``buffer`` without copying: the frames and convolution windows that
    the matrix products read."""
    size = buffer.itemsize
    return np.ndarray(shape, _F32, buffer, start * size, (row_step * size, size))


class SileroKernel:
    """One lane's Silero state; ``probability`` runs one 512-sample window."""

    window_samples = _WINDOW

    def __init__(self, weights: SileroWeights) -> None:
        self._w = weights
        # [64 context | 512 window | 64 reflected]: the samples the four kept frames read.
        self._audio = np.zeros(_CONTEXT + _WINDOW + _CONTEXT, _F32)
        self._frames = _view(self._audio, (4, _FRAME), _HOP)
        self._spectrum = np.zeros((4, 258), _F32)
        self._magnitude = np.zeros((6, 129), _F32)  # a zero frame either side
        self._conv0_in = _view(self._magnitude, (4, 3 * 129), 129)
        self._conv0 = np.zeros((6, 128), _F32)
        self._conv1_in = _view(self._conv0, (2, 3 * 128), 2 * 128)
        self._conv1 = np.zeros(3 * 64, _F32)
        self._conv2 = np.zeros(64, _F32)
        self._lstm_in = np.zeros(256, _F32)  # [encoder output | hidden state]
        self._gates = np.zeros(512, _F32)
        self._cell = np.zeros(128, _F32)
        self.reset()

    def reset(self) -> None:
        self._audio[:_CONTEXT] = 0.0
        self._lstm_in[128:] = 0.0
        self._cell[:] = 0.0

    def probability(self, window: np.ndarray) -> float:
        w, audio = self._w, self._audio
        audio[_CONTEXT : _CONTEXT + _WINDOW] = window
        audio[_CONTEXT + _WINDOW :] = audio[_WINDOW + _CONTEXT - 2 : _WINDOW - 2 : -1]
        spectrum = self._spectrum
        np.matmul(self._frames, w.stft, out=spectrum)
        np.multiply(spectrum, spectrum, out=spectrum)
        magnitude = self._magnitude[1:5]
        np.add(spectrum[:, :129], spectrum[:, 129:], out=magnitude)
        np.sqrt(magnitude, out=magnitude)
        audio[:_CONTEXT] = audio[_WINDOW : _WINDOW + _CONTEXT]
        (taps0, bias0), (taps1, bias1), (taps2, bias2), (taps3, bias3) = w.convs
        _dense_relu(self._conv0_in, taps0, bias0, self._conv0[1:5])
        _dense_relu(self._conv1_in, taps1, bias1, self._conv1[64:].reshape(2, 64))
        _dense_relu(self._conv1, taps2, bias2, self._conv2)
        _dense_relu(self._conv2, taps3, bias3, self._lstm_in[:128])
        gates = self._gates
        np.matmul(self._lstm_in, w.lstm, out=gates)
        gates += w.lstm_bias
        sig = gates[:384]  # input, output, forget
        np.negative(sig, out=sig)
        np.exp(sig, out=sig)
        sig += 1.0
        np.reciprocal(sig, out=sig)
        candidate = gates[384:]
        np.tanh(candidate, out=candidate)
        candidate *= sig[:128]
        cell = self._cell
        cell *= sig[256:384]
        cell += candidate
        hidden = self._lstm_in[128:]
        np.tanh(cell, out=hidden)
        hidden *= sig[128:256]
        logit = float(w.out @ np.maximum(hidden, 0.0)) + w.out_bias
        return 1.0 / (1.0 + float(np.exp(-logit)))


def _dense_relu(x: np.ndarray, taps: np.ndarray, bias: np.ndarray, out: np.ndarray) -> None:
    np.matmul(x, taps, out=out)
    out += bias
    np.maximum(out, 0.0, out=out)
