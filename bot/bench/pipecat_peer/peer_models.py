"""Glyphoxa's model files, loaded the way Glyphoxa loads them, behind Pipecat's interfaces.

Part of the Pipecat peer (see ``main.py``): the peer runs Pipecat's own services and analyzers;
only where Pipecat hard-codes a model file or a runtime option does an adapter here load
Glyphoxa's file with Glyphoxa's options, so the comparison is of the frameworks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
from faster_whisper import WhisperModel
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.services.whisper.stt import WhisperSTTService

__all__ = [
    "DecodeOptions",
    "MatchedWhisperSTT",
    "SileroV6",
    "SileroV6Analyzer",
    "piper_voice_without_spinning",
]


class SileroV6:
    """Glyphoxa's Silero file (faster-whisper's ``silero_vad_v6.onnx``) behind the interface of
    Pipecat's ``SileroOnnxModel``: the same 512-sample windows with 64 samples of context and
    the recurrent state carried, on onnxruntime with one thread as Pipecat runs its own file."""

    def __init__(self, path: str) -> None:
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            path, providers=["CPUExecutionProvider"], sess_options=options
        )
        self.reset_states()

    def reset_states(self, batch_size: int = 1) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(64, dtype=np.float32)

    def __call__(self, x: np.ndarray, sr: int) -> np.ndarray:
        window = np.concatenate([self._context, x.astype(np.float32, copy=False)])[None, :]
        out, self._h, self._c = self.session.run(
            None, {"input": window, "h": self._h, "c": self._c}
        )
        self._context = window[0, -64:]
        return np.asarray(out, dtype=np.float32).reshape(1, 1)


class SileroV6Analyzer(SileroVADAnalyzer):
    """Pipecat's Silero analyzer (thresholds, smoothing, state resets) on Glyphoxa's file."""

    def __init__(self, path: str, params: VADParams) -> None:
        super().__init__(params=params)
        self._model = SileroV6(path)  # type: ignore[assignment]


class DecodeOptions:
    """A WhisperModel whose ``transcribe`` decodes as Glyphoxa's does (greedy, no timestamps):
    Pipecat's service passes only language and prompts, so faster-whisper's beam of 5 would
    otherwise make the comparison one of decoding settings rather than of the frameworks."""

    def __init__(self, model: WhisperModel, options: dict[str, Any]) -> None:
        self.model = model
        self.options = options

    def transcribe(self, audio: np.ndarray, **options: Any) -> Any:
        return self.model.transcribe(audio, **{**options, **self.options})


class MatchedWhisperSTT(WhisperSTTService):
    """Pipecat's Whisper service (segmented on VAD stops) on Glyphoxa's model folder, loaded with
    Glyphoxa's compute type and threads."""

    def __init__(self, *, cpu_threads: int, decode: dict[str, Any], **kwargs: Any) -> None:
        self._cpu_threads = cpu_threads
        self._decode = decode
        super().__init__(**kwargs)

    def _load(self) -> None:
        model = WhisperModel(
            str(self._settings.model),  # type: ignore[attr-defined]
            device=self._device,
            compute_type=self._compute_type,
            cpu_threads=self._cpu_threads,
        )
        self._model = DecodeOptions(model, self._decode)


def piper_voice_without_spinning(path: Path) -> Any:
    """The Piper voice as Glyphoxa loads it: onnxruntime threads that sleep when idle."""
    from piper import PiperVoice
    from piper.config import PiperConfig

    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    config = PiperConfig.from_dict(json.loads(Path(f"{path}.json").read_text(encoding="utf-8")))
    return PiperVoice(session=session, config=config)
