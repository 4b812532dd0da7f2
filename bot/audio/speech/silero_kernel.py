"""Silero VAD v6 in numpy: the arithmetic of its ONNX graph, at a fraction of onnxruntime's CPU.

Silero was over half of a speaking player's receive + lane CPU. onnxruntime spends 60-95 us per
32 ms window, mostly dispatching twenty nodes over tensors of a few hundred floats. Here the
graph is five matrix products and an FFT into preallocated buffers. The graph
(faster-whisper's ``silero_vad_v6.onnx``): 64 samples of context before the 512-sample window,
reflect-padded, an STFT as a 256-tap convolution with stride 128 (frames 1-4 of 5 are kept),
the magnitude, four 3-tap convolutions with ReLU (strides 1, 2, 2, 1), one LSTM step (gates in
ONNX order i, o, f, c), ReLU, a 1x1 convolution and a sigmoid.

Three rewrites make it cheap on any BLAS. The STFT's basis is a Hann-windowed DFT, so it is an
FFT (a product of four rows is several times slower on OpenBLAS's Haswell kernels than on
its newer ones).
Every buffer a product reads ends in a constant 1.0 that meets the layer's bias, so no bias is
added on its own. The LSTM's sigmoid gates are tanh of half their input (weights halved at load),
so one tanh serves all four gates. The second convolution's two output frames are one product of
two rows or two of one, whichever this machine's BLAS does faster (timed once when the kernel
loads: which is faster differs between OpenBLAS's kernels).
:mod:`bot.audio.speech.vad` checks this kernel against onnxruntime whenever it loads and keeps
onnxruntime if they differ.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from bot.audio.speech.onnx_weights import float_initializers
from campaigns.basics import GlyphoxaError

__all__ = ["SileroKernel", "SileroWeights"]

_F32 = np.float32
_WINDOW, _CONTEXT, _HOP, _FRAME, _BINS = 512, 64, 128, 256, 129
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
_BASIS_TOLERANCE = 1e-5


def _taps(weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """(out, in, 3) conv -> (3 * (in + 1), out): row ``tap * (in + 1) + channel`` meets a
    flattened window of frames that each end in 1.0; the middle tap's 1.0 meets the bias."""
    out, channels, _ = weight.shape
    taps = np.zeros((3, channels + 1, out), _F32)
    taps[:, :channels] = weight.transpose(2, 1, 0)
    taps[1, channels] = bias
    return taps.reshape(-1, out)


def _hann_window(basis: np.ndarray, name: str) -> np.ndarray:
    """The window of a windowed-DFT basis (258, 256), or a clear error if it is not one."""
    window = basis[0].astype(np.float64)  # bin 0's real row: the window times cos(0)
    phase = 2 * np.pi * np.outer(np.arange(_BINS), np.arange(_FRAME)) / _FRAME
    dft = np.concatenate([np.cos(phase), -np.sin(phase)]) * window
    error = float(np.abs(dft - basis).max())
    if error > _BASIS_TOLERANCE:
        raise GlyphoxaError(f"{name} is not Silero VAD v6: its STFT is not a windowed DFT")
    weights: np.ndarray = window.astype(_F32)
    return weights


@dataclass(frozen=True, slots=True)
class SileroWeights:
    """The model's tensors, laid out for the kernel's products (shared by all lanes)."""

    window: np.ndarray  # (256,) the STFT's Hann window
    convs: tuple[np.ndarray, ...]  # per layer: taps with the bias as the last row
    lstm: np.ndarray  # (257, 512): [input | hidden | 1] -> gates; i, o, f halved
    out: np.ndarray
    out_bias: float

    @staticmethod
    @cache
    def load(path: str) -> SileroWeights:
        tensors = float_initializers(path)
        name = Path(path).name
        for tensor, shape in _SHAPES.items():
            found = tensors.get(tensor)
            if found is None or found.shape != shape:
                got = "missing" if found is None else f"shaped {found.shape}"
                raise GlyphoxaError(f"{name} is not Silero VAD v6: {tensor} is {got}")
        convs = [
            _taps(tensors[f"encoder.conv_layers.{i}.weight"],
                  tensors[f"encoder.conv_layers.{i}.bias"])
            for i in range(4)
        ]  # fmt: skip
        # The last layer sees one frame between two pads: only its middle tap meets audio.
        convs[3] = np.ascontiguousarray(convs[3][65:130])
        inputs, hidden = tensors["onnx::LSTM_209"][0], tensors["onnx::LSTM_210"][0]
        bias = tensors["onnx::LSTM_211"][0]
        lstm = np.concatenate([inputs, hidden, (bias[:512] + bias[512:])[:, None]], axis=1).T
        lstm[:, :384] *= 0.5  # sigmoid(x) = (1 + tanh(x / 2)) / 2
        basis = tensors["encoder.feature_extractor.forward_basis_buffer"][:, 0]
        return SileroWeights(
            window=_hann_window(basis, name),
            convs=tuple(convs),
            lstm=np.ascontiguousarray(lstm, dtype=_F32),
            out=tensors["decoder.conv1d.weight"][0, :, 0].copy(),
            out_bias=float(tensors["decoder.conv1d.bias"][0]),
        )


def _view(buffer: np.ndarray, shape: tuple[int, int], row_step: int) -> np.ndarray:
    """Overlapping rows of ``buffer`` without copying: the frames and convolution windows that
    the products read."""
    size = buffer.itemsize
    return np.ndarray(shape, _F32, buffer, 0, (row_step * size, size))


def _frames_with_bias_slot(rows: int, width: int) -> np.ndarray:
    """``rows`` frames of ``width`` values, each followed by the 1.0 that meets a bias."""
    frames = np.zeros((rows, width + 1), _F32)
    frames[:, width] = 1.0
    return frames


class SileroKernel:
    """One lane's Silero state; ``probability`` runs one 512-sample window."""

    window_samples = _WINDOW

    def __init__(self, weights: SileroWeights) -> None:
        self._w = weights
        # [64 context | 512 window | 64 reflected]: the samples the four kept frames read.
        self._audio = np.zeros(_CONTEXT + _WINDOW + _CONTEXT, _F32)
        self._frames = _view(self._audio, (4, _FRAME), _HOP)
        self._windowed = np.zeros((4, _FRAME), _F32)
        self._spectrum = np.zeros((4, _BINS), np.complex64)
        # Each layer's output has a zero frame either side: the next convolution's padding.
        self._magnitude = _frames_with_bias_slot(6, _BINS)
        self._conv0_in = _view(self._magnitude, (4, 3 * (_BINS + 1)), _BINS + 1)
        self._conv0 = _frames_with_bias_slot(6, 128)
        self._conv1_in = _view(self._conv0, (2, 3 * 129), 2 * 129)
        self._conv1 = _frames_with_bias_slot(3, 64)  # a zero frame, then the two outputs
        conv1_out = self._conv1[1:3, :64]
        # (input, output) per product: both rows at once, or one row each where that is faster
        self._conv1_parts: tuple[tuple[np.ndarray, np.ndarray], ...] = (
            tuple(zip(self._conv1_in, conv1_out, strict=True))
            if _single_rows_are_faster(weights.convs[1].shape)
            else ((self._conv1_in, conv1_out),)
        )
        self._conv2 = _frames_with_bias_slot(1, 64)[0]
        self._lstm_in = np.zeros(257, _F32)  # [encoder output | hidden state | 1]
        self._lstm_in[256] = 1.0
        self._gates = np.zeros(512, _F32)
        self._cell = np.zeros(128, _F32)
        self.reset()

    def reset(self) -> None:
        self._audio[:_CONTEXT] = 0.0
        self._lstm_in[128:256] = 0.0
        self._cell[:] = 0.0

    def probability(self, window: np.ndarray) -> float:
        w, audio = self._w, self._audio
        audio[_CONTEXT : _CONTEXT + _WINDOW] = window
        audio[_CONTEXT + _WINDOW :] = audio[_WINDOW + _CONTEXT - 2 : _WINDOW - 2 : -1]
        np.multiply(self._frames, w.window, out=self._windowed)
        # numpy keeps float32 input as complex64 (its stubs say complex128 only)
        np.fft.rfft(self._windowed, out=self._spectrum)  # type: ignore[arg-type]
        np.abs(self._spectrum, out=self._magnitude[1:5, :_BINS])
        audio[:_CONTEXT] = audio[_WINDOW : _WINDOW + _CONTEXT]
        taps0, taps1, taps2, taps3 = w.convs
        _relu_product(self._conv0_in, taps0, self._conv0[1:5, :128])
        for x, out in self._conv1_parts:
            np.matmul(x, taps1, out=out)
        np.maximum(self._conv1, 0.0, out=self._conv1)
        _relu_product(self._conv1.reshape(-1), taps2, self._conv2[:64])
        _relu_product(self._conv2, taps3, self._lstm_in[:128])
        gates = self._gates
        np.matmul(self._lstm_in, w.lstm, out=gates)
        np.tanh(gates, out=gates)
        sig = gates[:384]  # input, output, forget: (1 + tanh(x / 2)) / 2
        sig *= 0.5
        sig += 0.5
        candidate = gates[384:]
        candidate *= sig[:128]
        cell = self._cell
        cell *= sig[256:384]
        cell += candidate
        hidden = self._lstm_in[128:256]
        np.tanh(cell, out=hidden)
        hidden *= sig[128:256]
        logit = float(w.out @ np.maximum(hidden, 0.0)) + w.out_bias
        return 1.0 / (1.0 + float(np.exp(-logit)))


def _relu_product(x: np.ndarray, taps: np.ndarray, out: np.ndarray) -> None:
    np.matmul(x, taps, out=out)
    np.maximum(out, 0.0, out=out)


@cache
def _single_rows_are_faster(shape: tuple[int, int]) -> bool:
    """Whether this BLAS multiplies two rows by a ``shape`` matrix faster one row at a time."""
    x = np.random.default_rng(0).standard_normal((2, shape[0])).astype(_F32)
    taps = np.ones(shape, _F32)
    out = np.zeros((2, shape[1]), _F32)
    rows = tuple(zip(x, out, strict=True))
    best = {True: float("inf"), False: float("inf")}
    for _round in range(3):
        for single in (False, True):
            started = time.perf_counter()
            for _ in range(100):
                if single:
                    for row, into in rows:
                        np.matmul(row, taps, out=into)
                else:
                    np.matmul(x, taps, out=out)
            best[single] = min(best[single], time.perf_counter() - started)
    return best[True] < best[False]
