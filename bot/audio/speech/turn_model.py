"""Smart Turn v3.2: has the player finished speaking, judged from the sound of it?

The model (BSD-2-Clause, ~8.7 MB ONNX, CPU) ships inside the ``pipecat-ai`` wheel, which
``scripts/setup`` installs without its dependencies: we never import ``pipecat`` (its package
init needs loguru and more); we find the package folder, load the ONNX file with onnxruntime
and its numpy-only Whisper feature extractor from the same folder. Nothing is downloaded.

Input: the utterance so far, 16 kHz mono float32, including the short pause after it; the last
8 s are scored (shorter audio is padded at the front, as the model was trained). Output: the
probability that the turn is complete.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import threading
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from bot.settings.config import TurnConfig
from campaigns.basics import GlyphoxaError

__all__ = ["SmartTurnModel", "load_turn_model", "smart_turn_dir"]

log = logging.getLogger(__name__)

_MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
_FEATURES_FILE = "_whisper_features.py"
_WINDOW_SAMPLES = 8 * 16_000
_FIX = "run ./scripts/setup (it installs pipecat-ai==1.14.0 with --no-deps for the model file)"


def smart_turn_dir() -> Path:
    """The folder of the Smart Turn model inside the installed ``pipecat-ai`` wheel.

    Raises:
        GlyphoxaError: the wheel or the model file is missing (with the fix).
    """
    spec = importlib.util.find_spec("pipecat")  # top-level: finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        raise GlyphoxaError(f"the Smart Turn model is not installed: {_FIX}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "audio" / "turn" / "smart_turn"
    for name in (_FEATURES_FILE, f"data/{_MODEL_FILE}"):
        if not (folder / name).is_file():
            raise GlyphoxaError(f"Smart Turn file missing: {folder / name}; {_FIX}")
    return folder


@cache
def _features_module(folder: str) -> ModuleType:
    path = Path(folder) / _FEATURES_FILE
    spec = importlib.util.spec_from_file_location("glyphoxa_smart_turn_features", path)
    if spec is None or spec.loader is None:
        raise GlyphoxaError(f"cannot load the Smart Turn feature extractor {path}; {_FIX}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "compute_whisper_log_mel_features"):
        raise GlyphoxaError(f"{path} has no compute_whisper_log_mel_features; {_FIX}")
    return module


@cache
def _session(model_path: str, optimize: bool) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if not optimize:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1  # lanes, Whisper, Piper and the LLM share two cores
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 4
    try:
        session = onnxruntime.InferenceSession(
            model_path, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime raises its own exception types
        raise GlyphoxaError(f"cannot load the Smart Turn model {model_path}: {error}") from None
    names = [i.name for i in session.get_inputs()]
    if names != ["input_features"]:
        raise GlyphoxaError(f"unexpected Smart Turn model inputs {names} in {model_path}")
    return session


class SmartTurnModel:
    """``probability(audio)``: how sure the model is that the turn is over (thread-safe).

    Args:
        model_path: another Smart Turn ONNX file (default: the one in the pipecat-ai wheel).
        optimize: let onnxruntime fuse the graph (the default). Without fusion the same weights
            run through other kernels, as on another CPU: a score that changes by more than
            the margin of a decision is a score no test or threshold may rely on.
    """

    def __init__(self, model_path: str | Path | None = None, *, optimize: bool = True) -> None:
        folder = smart_turn_dir()  # the feature extractor lives there even for another model
        self.model_path = Path(model_path) if model_path else folder / "data" / _MODEL_FILE
        if not self.model_path.is_file():
            raise GlyphoxaError(f"Smart Turn model not found: {self.model_path}; {_FIX}")
        self._features = _features_module(str(folder))
        self._session = _session(str(self.model_path), optimize)
        self._lock = threading.Lock()

    def probability(self, audio: np.ndarray) -> float:
        """Probability in [0, 1] that the speaker finished, from the last 8 s of ``audio``."""
        samples = np.asarray(audio, dtype=np.float32).reshape(-1)[-_WINDOW_SAMPLES:]
        if samples.size < _WINDOW_SAMPLES:
            samples = np.pad(samples, (_WINDOW_SAMPLES - samples.size, 0))
        features = self._features.compute_whisper_log_mel_features(samples, do_normalize=True)
        with self._lock:
            (logits,) = self._session.run(None, {"input_features": features[None, ...]})
        return float(np.asarray(logits).reshape(-1)[0])


async def load_turn_model(config: TurnConfig) -> SmartTurnModel | None:
    """The configured turn model, loaded off the event loop; None when ``detector`` is ``off``
    or the model cannot load (said once, with the fix: turns then end after the hangover)."""
    if config.detector == "off":
        return None
    try:
        return await asyncio.to_thread(SmartTurnModel, config.model_path)
    except GlyphoxaError as error:
        log.warning("%s; turns end after the VAD hangover instead", error)
        return None
