"""Voice activity detectors behind ``VadModel``: Silero (ONNX, default) and webrtcvad.

Silero v6 ships inside faster-whisper; we run it with onnxruntime directly, one 512-sample
window (32 ms at 16 kHz) at a time with its recurrent state and 64 samples of left context, so a
lane costs a fraction of a millisecond per window. The ONNX session is shared (it is
thread-safe); the state is per lane.
"""

from __future__ import annotations

import logging
import threading
from functools import cache
from pathlib import Path

import numpy as np

from bot.config import VadConfig
from bot.speech.protocols import VadModel
from campaigns.errors import GlyphoxaError

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


class SileroVad:
    """Silero v6 speech probability per 512-sample window."""

    window_samples = 512
    _context_samples = 64

    def __init__(self, model_path: str | Path | None = None) -> None:
        with _session_lock:
            self._session = _silero_session(str(model_path or silero_model_path()))
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(self._context_samples, dtype=np.float32)
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
        x = np.concatenate([self._context, window.astype(np.float32, copy=False)])[None, :]
        out, self._h, self._c = self._session.run(None, {"input": x, "h": self._h, "c": self._c})
        self._context = x[0, -self._context_samples :]
        return float(np.asarray(out).reshape(-1)[0])


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
    return SileroVad()
