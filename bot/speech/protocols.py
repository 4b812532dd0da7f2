"""Provider interfaces: what a VAD, a speech recognizer and a voice must offer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from bot.speech.audio import AudioChunk

if TYPE_CHECKING:
    from bot.speech.vocabulary import Vocabulary
    from npcs.schema import VoiceSettings

__all__ = ["SttProvider", "TtsProvider", "VadModel"]


@runtime_checkable
class VadModel(Protocol):
    """Speech probability per fixed window of 16 kHz mono float32. Stateful: one per lane."""

    window_samples: int

    def probability(self, window: np.ndarray) -> float: ...

    def reset(self) -> None: ...


@runtime_checkable
class SttProvider(Protocol):
    """Transcribes a whole utterance so far (16 kHz mono float32); never blocks the loop."""

    async def transcribe(
        self,
        audio: np.ndarray,
        *,
        partial: bool = False,
        vocabulary: Vocabulary | None = None,
    ) -> str: ...


@runtime_checkable
class TtsProvider(Protocol):
    """Speaks one sentence in a voice, yielding audio as soon as the first piece exists.

    Closing the iterator early (barge-in) must stop synthesis promptly.
    """

    def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]: ...
