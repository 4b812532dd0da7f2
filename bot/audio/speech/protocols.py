"""Provider interfaces: what a VAD, a speech recognizer and a voice must offer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from campaigns.basics import AudioChunk

if TYPE_CHECKING:
    from bot.audio.speech.vocabulary import Vocabulary
    from campaigns.providers.voices import VoiceSettings

__all__ = ["FirstLook", "SttProvider", "TtsProvider", "TwoLookStt", "VadModel"]


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


@dataclass(frozen=True, slots=True)
class FirstLook:
    """A final's words from the cheap decode, and whether they must be heard again (a name's
    slot without a name, a loop) before they are trusted."""

    text: str
    doubtful: bool = False
    loops: bool = False
    early: bool = False
    """Words so far, heard while the player still talks (a slot look,
    ``bot.audio.speech.name_slot``): its second look is counted apart from a final's."""


@runtime_checkable
class TwoLookStt(SttProvider, Protocol):
    """A recognizer whose final may take a second, dearer decode: the caller schedules the two
    separately, so another speaker's final can go between them (``transcribe`` is both)."""

    async def first_look(
        self, audio: np.ndarray, *, vocabulary: Vocabulary | None = None
    ) -> FirstLook: ...

    async def second_look(
        self, audio: np.ndarray, first: FirstLook, *, vocabulary: Vocabulary | None = None
    ) -> str: ...


@runtime_checkable
class TtsProvider(Protocol):
    """Speaks one sentence in a voice, yielding audio as soon as the first piece exists.

    Closing the iterator early (barge-in) must stop synthesis promptly.
    """

    def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]: ...
