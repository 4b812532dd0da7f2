"""Voice activity detectors behind ``VadModel``: Silero (ONNX, default) and webrtcvad.

Silero v6 ships inside faster-whisper. We run it one 512-sample window (32 ms at 16 kHz) at a
time with its recurrent state and 64 samples of left context: on the numpy kernel of
:mod:`bot.audio.speech.silero_kernel` (half of onnxruntime's CPU or less) once it has been checked
against onnxruntime in this process, else on onnxruntime directly. Weights and the ONNX session
are shared (both are thread-safe to read); the state is per lane.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import cache
from pathlib import Path

import numpy as np

from bot.audio.speech.protocols import VadModel
from bot.audio.speech.silero_kernel import SileroKernel, SileroWeights
from bot.settings.config import VadConfig
from campaigns.basics import GlyphoxaError

__all__ = ["SileroVad", "WebRtcVad", "create_vad", "silero_model_path"]

log = logging.getLogger(__name__)

_session_lock = threading.Lock()


def silero_model_path() -> Path:
    import faster_whisper

    path = Path(faster_whisper.__file__).parent / "assets" / "silero_vad_v6.onnx"
    if not path.is_file():
        raise GlyphoxaError(f"Silero VAD model missing at {path}; reinstall faster-whisper")
    return path


@cache
def _silero_session(path: str):  # type: ignore[no-untyped-def]
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 4
    session = onnxruntime.InferenceSession(
        path, providers=["CPUExecutionProvider"], sess_options=options
    )
    names = {i.name for i in session.get_inputs()}
    if names != {"input", "h", "c"}:
        raise GlyphoxaError(f"unexpected Silero VAD model inputs {sorted(names)} in {path}")
    return session


_FRESH_AFTER_ZERO_WINDOWS = 31  # 512-sample windows at 16 kHz: about one second
_CHECK_TOLERANCE = 1e-4  # the kernels agree to ~1e-6; a layout mistake is off by far more


class _OnnxSilero:
    """Silero on onnxruntime: the reference, and the fallback when the numpy kernel is off."""

    window_samples = 512
    _context_samples = 64

    def __init__(self, session) -> None:  # type: ignore[no-untyped-def]
        self._session = session
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(self._context_samples, dtype=np.float32)

    def probability(self, window: np.ndarray) -> float:
        x = np.concatenate([self._context, window.astype(np.float32, copy=False)])[None, :]
        out, self._h, self._c = self._session.run(None, {"input": x, "h": self._h, "c": self._c})
        self._context = x[0, -self._context_samples :]
        return float(np.asarray(out).reshape(-1)[0])


def _check_signal() -> np.ndarray:
    """Two seconds that sweep the model's range: voiced harmonics that come and go, in noise."""
    t = np.arange(32_000) / 16_000
    voice = sum(np.sin(2 * np.pi * k * (140 + 30 * np.sin(3 * t)) * t) / k for k in range(1, 6))
    gate = np.sin(2 * np.pi * 0.75 * t) > 0
    noise = np.random.default_rng(7).standard_normal(t.size) * 0.01
    return (0.2 * voice * gate + noise).astype(np.float32)


@cache
def _silero_engine(path: str, wanted: str) -> tuple[str, str]:
    """(engine, why): the numpy kernel where it gives onnxruntime's probabilities and, for
    ``auto``, costs less on this machine; onnxruntime otherwise. Checked once per process."""
    if wanted == "onnxruntime":
        return "onnxruntime", "speech.vad.engine: onnxruntime"
    try:
        kernel = SileroKernel(SileroWeights.load(path))
    except GlyphoxaError as exc:
        if wanted == "numpy":
            raise
        log.warning("Silero VAD on onnxruntime: %s", exc)
        return "onnxruntime", str(exc)
    reference = _OnnxSilero(_silero_session(path))
    audio = _check_signal()
    windows = [audio[i : i + 512] for i in range(0, audio.size - 511, 512)]
    cost = {"numpy": float("inf"), "onnxruntime": float("inf")}
    worst = 0.0
    for _round in range(2):
        kernel.reset()
        reference.reset()
        mine: list[float] = []
        theirs: list[float] = []
        for engine, vad, out in (("numpy", kernel, mine), ("onnxruntime", reference, theirs)):
            started = time.thread_time()
            out.extend(vad.probability(w) for w in windows)
            cost[engine] = min(cost[engine], (time.thread_time() - started) / len(windows))
        worst = max(worst, max(abs(a - b) for a, b in zip(mine, theirs, strict=True)))
    us = f"{cost['numpy'] * 1e6:.0f} us a window, onnxruntime {cost['onnxruntime'] * 1e6:.0f} us"
    if worst > _CHECK_TOLERANCE:
        why = f"the numpy Silero kernel is off by {worst:.2g} on {Path(path).name}"
        if wanted == "numpy":
            raise GlyphoxaError(f"{why}; set speech.vad.engine: onnxruntime")
        log.warning("Silero VAD on onnxruntime: %s", why)
        return "onnxruntime", why
    if wanted == "auto" and cost["numpy"] > cost["onnxruntime"]:
        log.info("Silero VAD on onnxruntime: the numpy kernel is slower here (%s)", us)
        return "onnxruntime", f"numpy kernel slower here ({us})"
    log.info("Silero VAD on the numpy kernel: %s", us)
    return "numpy", us


class SileroVad:
    """Silero v6 speech probability per 512-sample window, on the numpy kernel or onnxruntime
    (``speech.vad.engine``; both give the same probabilities)."""

    window_samples = 512

    def __init__(self, model_path: str | Path | None = None, engine: str = "auto") -> None:
        path = str(model_path or silero_model_path())
        with _session_lock:
            self.engine, self.engine_note = _silero_engine(path, engine)
            self._kernel: SileroKernel | _OnnxSilero = (
                SileroKernel(SileroWeights.load(path))
                if self.engine == "numpy"
                else _OnnxSilero(_silero_session(path))
            )
        self._zero_windows = 0

    def reset(self) -> None:
        self._kernel.reset()
        self._zero_windows = 0

    def probability(self, window: np.ndarray) -> float:
        # Digital silence (a rehearsal's idle player, padding) is no speech. Fed to the model
        # for 20 s or more, it drifts the LSTM state so far that the next low voice is missed
        # for about a second ("Greymantle, take your time" heard as "Take your time"); after
        # a second of it, start from a fresh state as a new lane would.
        if not window.any():
            self._zero_windows += 1
            if self._zero_windows == _FRESH_AFTER_ZERO_WINDOWS:
                self.reset()
            return 0.0
        self._zero_windows = 0
        return self._kernel.probability(window)


class WebRtcVad:
    """webrtcvad on 30 ms windows; probability is 0.0 or 1.0."""

    window_samples = 480

    def __init__(self, aggressiveness: int = 2) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(aggressiveness)

    def reset(self) -> None:
        """webrtcvad keeps no state we need to clear."""

    def probability(self, window: np.ndarray) -> float:
        pcm = (np.clip(window, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        return 1.0 if self._vad.is_speech(pcm, 16_000) else 0.0


def create_vad(config: VadConfig) -> VadModel:
    """A fresh (per-lane) VAD as configured."""
    if config.provider == "webrtc":
        return WebRtcVad(config.aggressiveness)
    return SileroVad(engine=config.engine)
