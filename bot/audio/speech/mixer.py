"""The mixer: NPC voices and ambience into 20 ms 48 kHz stereo frames, one NPC at a time.

``next_frame()`` is a 20 ms pull: called from a playback thread, it never blocks on the event
loop, never waits for TTS (an underrun is silence) and always returns ``FRAME_BYTES``.
``pull_audio()`` is the same pull for a sender that sends only while there is something to hear
(:mod:`bot.audio.voice.playback`): None instead of a silent frame, with listeners told whenever
audio may have become ready, so an idle sender sleeps until then. Floor control: the first
``speak()`` takes the floor, later ones queue in order and may pre-buffer audio; the floor passes
when the holder has played out (``finish()``) or is cancelled (barge-in, mute).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable

import numpy as np

from bot.audio.speech.ambience import AmbiencePlayer
from bot.audio.speech.audio import CHANNELS, FRAME_BYTES, FRAME_SAMPLES, SILENCE_FRAME
from bot.audio.speech.handle import HandleState, SpeechHandle
from bot.settings.config import SpeechConfig

__all__ = ["Mixer"]

log = logging.getLogger(__name__)


class Mixer:
    """Thread-safe frame source; the asyncio side calls ``speak`` / handle methods."""

    def __init__(self, config: SpeechConfig | None = None) -> None:
        config = config or SpeechConfig()
        self._lock = threading.RLock()
        self._current: SpeechHandle | None = None
        self._queue: deque[SpeechHandle] = deque()
        self._last_voice: np.ndarray | None = None
        self._cue: np.ndarray | None = None
        """A short sound over everything (a DM command's acknowledgement), mono int16."""
        self._listeners: list[Callable[[], None]] = []
        self.ambience = AmbiencePlayer(
            volume=config.ambience_volume, duck=config.ambience_duck, on_start=self._changed
        )
        self.frames_rendered = 0

    # --- asyncio side ------------------------------------------------------------------------
    def speak(self, npc: str) -> SpeechHandle:
        """A new handle for ``npc``: on the floor at once if it is free, else queued."""
        handle = SpeechHandle(npc, self._lock, on_change=self._changed)
        with self._lock:
            if self._current is None:
                self._take_floor(handle)
            else:
                self._queue.append(handle)
        log.debug("speak %s -> %s", npc, handle.state.value)
        return handle

    def play_cue(self, samples: np.ndarray) -> None:
        """Play a short mono 48 kHz int16 sound now, over any voice and without the floor."""
        with self._lock:
            self._cue = np.asarray(samples, dtype=np.int16).copy()
        self._changed()

    def cancel_all(self) -> None:
        with self._lock:
            for handle in [*self._queue, *([self._current] if self._current else [])]:
                handle.cancel()

    def cancel_npc(self, npc: str) -> None:
        with self._lock:
            for handle in [*self._queue, *([self._current] if self._current else [])]:
                if handle.npc == npc:
                    handle.cancel()

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called (from any thread, maybe with the mixer lock held: keep it short and do not
        block) whenever a handle gets audio, finishes feeding, is cancelled or takes the floor,
        a cue is played or an ambience track starts."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback`` (a playback that ended: a rejoin starts a new one)."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    # --- queries -------------------------------------------------------------------------------
    @property
    def current(self) -> SpeechHandle | None:
        """The handle holding the floor."""
        with self._lock:
            self._settle()
            return self._current

    @property
    def queued(self) -> list[SpeechHandle]:
        with self._lock:
            self._settle()
            return list(self._queue)

    @property
    def npc_speaking(self) -> bool:
        """An NPC is audible right now (the floor holder has started playing)."""
        with self._lock:
            self._settle()
            return self._current is not None and self._current.playback_started_at is not None

    @property
    def busy(self) -> bool:
        with self._lock:
            self._settle()
            return self._current is not None or bool(self._queue)

    @property
    def mid_utterance(self) -> bool:
        """The floor holder is audible and not done: silence now is a gap in its speech (the
        TTS running behind), not its end."""
        with self._lock:
            self._settle()
            holder = self._current
            return holder is not None and holder.playback_started_at is not None

    @property
    def starved(self) -> bool:
        """The floor holder waits for TTS audio (rendering now would only add silence)."""
        with self._lock:
            self._settle()
            holder = self._current
            return (
                holder is not None
                and not holder.finished_feeding
                and holder.buffered_samples < FRAME_SAMPLES
            )

    # --- pull side -----------------------------------------------------------------------------
    def next_frame(self) -> bytes:
        """One 20 ms 48 kHz stereo s16le frame (3840 bytes); never blocks for long."""
        return self.pull_audio() or SILENCE_FRAME

    def pull_audio(self) -> bytes | None:
        """The next 20 ms frame, or None when nothing in it would be heard (no voice ready, no
        ambience, no cue). Pulling an idle mixer changes nothing, so a sender may pull to see
        whether there is audio yet."""
        with self._lock:
            self.frames_rendered += 1
            self._settle()
            voice = self._pull_voice()
            speaking = voice is not None
            self._last_voice = voice
            cue = self._pull_cue()
        ambience = self.ambience.next_block(FRAME_SAMPLES, ducked=speaking)
        if voice is None and ambience is None and cue is None:
            return None
        mixed = np.zeros((FRAME_SAMPLES, CHANNELS), dtype=np.int32)
        if voice is not None:
            mixed += voice[:, None]
        if ambience is not None:
            mixed += ambience
        if cue is not None:
            mixed += cue[:, None]
        frame = np.clip(mixed, -32768, 32767).astype("<i2").tobytes()
        assert len(frame) == FRAME_BYTES
        return frame

    def last_voice_frame(self) -> bytes | None:
        """The NPC voice alone in the frame ``next_frame`` returned last (no ambience), or None
        if no one spoke in it: for per-NPC recordings."""
        voice = self._last_voice
        if voice is None:
            return None
        stereo = np.repeat(np.clip(voice, -32768, 32767).astype("<i2")[:, None], CHANNELS, axis=1)
        return stereo.tobytes()

    def _pull_cue(self) -> np.ndarray | None:
        cue = self._cue
        if cue is None:
            return None
        block = np.zeros(FRAME_SAMPLES, dtype=np.int32)
        taken = cue[:FRAME_SAMPLES]
        block[: len(taken)] = taken
        self._cue = cue[FRAME_SAMPLES:] if len(cue) > FRAME_SAMPLES else None
        return block

    def _pull_voice(self) -> np.ndarray | None:
        holder = self._current
        if holder is None:
            return None
        if holder.buffered_samples >= FRAME_SAMPLES or (
            holder.finished_feeding and holder.buffered_samples
        ):
            samples = holder._take(FRAME_SAMPLES)
            if holder.finished_feeding and holder.buffered_samples == 0:
                holder._complete(HandleState.FINISHED)
                self._settle()
            return samples
        if holder.finished_feeding:
            holder._complete(HandleState.FINISHED)
            self._settle()
        return None  # underrun: the TTS is behind; silence rather than a click-y partial frame

    def _settle(self) -> None:
        """Drop finished/cancelled handles and pass the floor on."""
        self._queue = deque(h for h in self._queue if not h.done())
        while self._current is not None and self._current.done():
            self._current = None
            if self._queue:
                self._take_floor(self._queue.popleft())

    def _take_floor(self, handle: SpeechHandle) -> None:
        self._current = handle
        handle.state = HandleState.PLAYING
        self._changed()  # listeners learn when a queued NPC gets the floor (any thread)

    def _changed(self) -> None:
        for callback in self._listeners:
            callback()
