"""One NPC utterance on its way to the speakers, and the record of which words were heard.

The TTS side feeds audio sentence by sentence (``feed(chunk, text=...)`` opens a sentence); the
mixer's 20 ms pull thread consumes it. Each sentence keeps its sample span, so when a player
barges in the handle can say exactly which sentences were heard in full and how much of the one
that was cut off (proportionally, by words).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np

from bot.audio.speech.audio import SAMPLE_RATE, OutputResampler
from campaigns.basics import AudioChunk

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HandleState", "SpeechHandle", "SpeechResult"]

log = logging.getLogger(__name__)


class HandleState(StrEnum):
    QUEUED = "queued"
    """Waiting for the floor (audio may already be buffered)."""
    PLAYING = "playing"
    """On the floor (audible once ``playback_started_at`` is set)."""
    FINISHED = "finished"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class SpeechResult:
    """What became of one NPC utterance; ``played_text`` is what goes into the transcript."""

    npc: str
    full_text: str
    played_text: str
    interrupted: bool
    played_s: float


@dataclass(slots=True)
class _Sentence:
    text: str
    start: int
    end: int
    captioned: bool = False
    """The text came later, from a running transcript (``caption``)."""


class SpeechHandle:
    """Created by ``Mixer.speak``; thread-safe between the asyncio side and the pull thread."""

    def __init__(
        self, npc: str, lock: threading.RLock, on_change: Callable[[], None] | None = None
    ) -> None:
        self.npc = npc
        self._lock = lock
        self._on_change = on_change
        self._resampler = OutputResampler()
        self._chunks: deque[np.ndarray] = deque()
        self._buffered = 0
        self._fed = 0
        self._played = 0
        self._sentences: list[_Sentence] = []
        self._caption = ""
        self._finished_feeding = False
        self.state = HandleState.QUEUED
        self.playback_started_at: float | None = None
        """``time.monotonic()`` of the first audible frame."""
        self._loop: asyncio.AbstractEventLoop | None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._started_event = asyncio.Event() if self._loop else None
        self._done_future: asyncio.Future[SpeechResult] | None = (
            self._loop.create_future() if self._loop else None
        )
        self._done = threading.Event()

    # --- producer side (asyncio) -------------------------------------------------------------
    def caption(self, text: str) -> None:
        """The words of the audio fed so far without text (a speech-to-speech engine's running
        transcript): ``played_text`` then holds the heard share of them."""
        with self._lock:
            for sentence in self._sentences:
                if not sentence.text or sentence.captioned:
                    sentence.text, sentence.captioned = text, True
                    return
            self._caption = text  # the transcript ran ahead of the audio: for its first chunk

    def feed(self, chunk: AudioChunk, text: str | None = None) -> None:
        """Append audio; ``text`` starts a new sentence at this point of the audio."""
        samples = self._resampler.process(chunk)
        with self._lock:
            if self._finished_feeding or self.done():
                return
            if text is not None or not self._sentences:
                caption = "" if text is not None else self._caption
                self._sentences.append(
                    _Sentence(text or caption, self._fed, self._fed, captioned=bool(caption))
                )
            self._append(samples)
        self._notify()

    def finish(self) -> None:
        """No more audio will come; the floor passes on once the buffer is played."""
        tail = self._resampler.flush()
        with self._lock:
            if self._finished_feeding:
                return
            self._append(tail)
            self._finished_feeding = True
        self._notify()

    def cancel(self) -> None:
        """Stop now: the next mixer frame carries none of this handle's audio."""
        with self._lock:
            if self.done():
                return
            self._complete(HandleState.CANCELLED)
        self._notify()

    def _append(self, samples: np.ndarray) -> None:
        if samples.size:
            self._chunks.append(samples.astype(np.int16, copy=False))
            self._buffered += samples.size
            self._fed += samples.size
            if self._sentences:
                self._sentences[-1].end = self._fed

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change()

    # --- consumer side (pull thread; called with the lock held) --------------------------------
    @property
    def buffered_samples(self) -> int:
        return self._buffered

    @property
    def finished_feeding(self) -> bool:
        return self._finished_feeding

    def _take(self, n: int) -> np.ndarray:
        """Up to ``n`` samples of 48 kHz mono int16; marks playback start on the first audio."""
        out = np.zeros(n, dtype=np.int16)
        filled = 0
        while filled < n and self._chunks:
            head = self._chunks[0]
            take = min(n - filled, head.size)
            out[filled : filled + take] = head[:take]
            if take == head.size:
                self._chunks.popleft()
            else:
                self._chunks[0] = head[take:]
            filled += take
        self._buffered -= filled
        self._played += filled
        if filled and self.playback_started_at is None:
            self.playback_started_at = time.monotonic()
            self._call_in_loop(self._set_started)
        return out

    def _complete(self, state: HandleState) -> None:
        self.state = state
        self._chunks.clear()
        self._buffered = 0
        result = self.result()
        self._done.set()
        self._call_in_loop(self._set_done, result)

    def _call_in_loop(self, fn: Callable[..., None], *args: object) -> None:
        if self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # loop closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(fn, *args)

    def _set_started(self) -> None:
        if self._started_event is not None:
            self._started_event.set()

    def _set_done(self, result: SpeechResult) -> None:
        if self._started_event is not None:
            self._started_event.set()
        if self._done_future is not None and not self._done_future.done():
            self._done_future.set_result(result)

    # --- queries -------------------------------------------------------------------------------
    def done(self) -> bool:
        return self.state in (HandleState.FINISHED, HandleState.CANCELLED)

    @property
    def interrupted(self) -> bool:
        return self.state is HandleState.CANCELLED

    @property
    def full_text(self) -> str:
        """Every sentence fed so far, as ``played_text`` will read once all of it has played."""
        with self._lock:
            return " ".join(s.text for s in self._sentences if s.text)

    @property
    def played_text(self) -> str:
        """Sentences heard in full, plus the heard share (by words) of a cut-off one."""
        with self._lock:
            heard: list[str] = []
            for sentence in self._sentences:
                if not sentence.text or self._played <= sentence.start:
                    continue
                if self._played >= sentence.end:
                    heard.append(sentence.text)
                    continue
                words = sentence.text.split()
                share = (self._played - sentence.start) / max(1, sentence.end - sentence.start)
                count = int(share * len(words))
                if count:
                    heard.append(" ".join(words[:count]))
            return " ".join(heard)

    @property
    def played_s(self) -> float:
        return self._played / SAMPLE_RATE

    def result(self) -> SpeechResult:
        return SpeechResult(
            npc=self.npc,
            full_text=self.full_text,
            played_text=self.played_text,
            interrupted=self.interrupted,
            played_s=self.played_s,
        )

    async def wait_started(self) -> bool:
        """Until the first audible frame (True) or the end without any audio (False)."""
        if self._started_event is None:
            raise RuntimeError("handle was created outside an event loop")
        await self._started_event.wait()
        return self.playback_started_at is not None

    async def wait(self) -> SpeechResult:
        """Until played out or cancelled."""
        if self._done_future is None:
            raise RuntimeError("handle was created outside an event loop")
        return await asyncio.shield(self._done_future)

    def wait_blocking(self, timeout: float | None = None) -> bool:
        """Thread-side wait (CLI, tests without a loop)."""
        return self._done.wait(timeout)

    def __repr__(self) -> str:
        state = self.state.value
        return f"SpeechHandle(npc={self.npc!r}, state={state}, played={self.played_s:.2f}s)"
