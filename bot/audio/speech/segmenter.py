"""Cut a 16 kHz mono stream into utterances: threshold, hangover, pre-roll, max length.

Pure and synchronous (the lane runs it in a worker thread on batches of frames), so it is easy
to test on scripted audio. Speech starts after ``min_speech_ms`` of consecutive voiced windows
and is back-dated to the first of them; the pre-roll in front keeps the first syllable; it ends
after ``hangover_ms`` below the (hysteresis) threshold or at ``max_utterance_s``.

With ``pause_s`` the segmenter also reports each pause (``SegmentPause``, once per stretch of
silence) so the lane can judge it, and the lane's verdict shortens or lengthens the hangover of
that one pause (``set_end_rule``); speech resuming cancels the rule.

At a live pace each VAD pass meets cold caches and costs several times its hot price
(``glyphoxa bench receive``), so ``process(..., pair=True)`` lets a lone window in the middle
of a word wait for the next one and runs the two back to back. Only a window after one that
Silero was all but sure of (``_SURE``) waits: on the FAST and table-talk lines in noise, no
pause or end was judged later for it (``tests/speech/test_segmenter_pairs.py``).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from bot.audio.speech.audio import STT_SAMPLE_RATE
from bot.audio.speech.protocols import VadModel
from bot.settings.config import VadConfig

__all__ = [
    "SegmentEnd",
    "SegmentEvent",
    "SegmentPause",
    "SegmentProgress",
    "SegmentStart",
    "Segmenter",
]

log = logging.getLogger(__name__)

_TRAILING_KEEP_S = 0.2
"""Silence kept after the last voiced window: Whisper likes a little, more only costs time."""
_SURE = 0.97
"""A lone window may wait for the next (``pair``) after a window this surely speech. Nearer
the VAD threshold, some pauses and ends come a window pair late; this high, none do, and most
windows that could wait still wait."""


@dataclass(frozen=True, slots=True)
class SegmentStart:
    utterance_id: int
    onset: float


@dataclass(frozen=True, slots=True)
class SegmentProgress:
    utterance_id: int
    voiced_ms: float
    stream_time: float
    audio_samples: int
    """Length of the utterance audio at this point (for a partial)."""
    trailing_silence_ms: float = 0.0
    """Unvoiced time since the last voiced window (the utterance may be about to end)."""


@dataclass(frozen=True, slots=True)
class SegmentPause:
    """The speaker fell silent ``pause_s`` ago: judge whether the turn is over."""

    utterance_id: int
    voiced_end: float
    """Stream time of the last voiced audio (identifies this pause)."""
    stream_time: float
    audio_samples: int


@dataclass(frozen=True, slots=True)
class SegmentEnd:
    utterance_id: int
    onset: float
    end: float
    audio: np.ndarray
    truncated: bool
    reason: str = "hangover"
    """What ended it: ``hangover``, ``rule`` (the lane's verdict), ``max length``, ``flush``."""
    silence_s: float = 0.0
    """Silence after the last voiced audio when it ended (stream time)."""


SegmentEvent = SegmentStart | SegmentProgress | SegmentPause | SegmentEnd


class Segmenter:
    """Feed 16 kHz mono float32; get start/progress/end events with stream times in seconds."""

    def __init__(
        self,
        vad: VadModel,
        config: VadConfig,
        *,
        progress_ms: float = 50.0,
        hangover_ms: float | None = None,
        pause_ms: float | None = None,
    ) -> None:
        """``hangover_ms`` overrides ``config.hangover_ms`` (the lane's longest wait when a turn
        model judges pauses); ``pause_ms`` turns on ``SegmentPause`` events."""
        self._vad = vad
        self._config = config
        self._window = vad.window_samples
        self._window_s = self._window / STT_SAMPLE_RATE
        self._min_windows = max(1, math.ceil(config.min_speech_ms / 1000 / self._window_s))
        self._hangover_s = (config.hangover_ms if hangover_ms is None else hangover_ms) / 1000
        self._pause_s = None if pause_ms is None else pause_ms / 1000
        self._paused_at: float | None = None  # voiced_end of the pause already reported
        self._rule: tuple[int, float, float] | None = None  # (utterance, voiced_end, silence_s)
        self._threshold = config.threshold
        self._neg_threshold = max(0.01, config.threshold - 0.15)
        preroll_windows = math.ceil(config.preroll_ms / 1000 / self._window_s)
        self._preroll: deque[np.ndarray] = deque(maxlen=max(1, preroll_windows))
        self._progress_s = progress_ms / 1000
        self._pending = np.zeros(0, dtype=np.float32)
        self._sure = False
        """The last window was surely speech, inside an utterance."""
        self._waiting = False
        self.paired = 0
        """Windows that waited for the next one (``pair``)."""
        self._processed = 0
        self._candidate: list[np.ndarray] = []
        self._utterance: list[np.ndarray] | None = None
        self._utterance_id = 0
        self._onset = 0.0
        self._last_voiced_end = 0.0
        self._next_progress = 0.0
        self._samples_in_utterance = 0

    @property
    def utterance_id(self) -> int:
        """Id of the utterance in progress (0 if none has started yet)."""
        return self._utterance_id

    @property
    def in_speech(self) -> bool:
        return self._utterance is not None

    @property
    def stream_time(self) -> float:
        return self._processed / STT_SAMPLE_RATE

    @property
    def onset(self) -> float:
        """Stream time at which the current utterance began."""
        return self._onset

    @property
    def window_samples(self) -> int:
        return self._window

    @property
    def pending_samples(self) -> int:
        """Audio waiting for a whole VAD window."""
        return int(self._pending.size)

    @property
    def voiced_end(self) -> float:
        """Stream time of the last voiced audio of the current utterance."""
        return self._last_voiced_end

    @property
    def trailing_silence_s(self) -> float:
        """Silence since the last voiced audio of the utterance in progress (0 when none)."""
        return self.stream_time - self._last_voiced_end if self._utterance is not None else 0.0

    def silence_that_acts_s(self) -> float | None:
        """Trailing silence at which silence alone next changes something (a pause to report,
        the end); None outside an utterance. A lane fed silence feeds it up to there."""
        if self._utterance is None:
            return None
        rule = self._rule_silence()
        wait = self._hangover_s if rule is None else rule
        if self._pause_s is not None and self._paused_at != self._last_voiced_end:
            wait = min(wait, self._pause_s)
        return wait - self._window_s / 2

    def set_end_rule(self, utterance_id: int, voiced_end: float, silence_s: float) -> None:
        """End ``utterance_id`` after ``silence_s`` of silence, unless speech resumes after
        ``voiced_end`` (the pause the rule was made for). Safe to call from another thread
        while ``process`` runs (one atomic assignment)."""
        self._rule = (utterance_id, voiced_end, silence_s)

    def poll(self) -> list[SegmentEvent]:
        """End the utterance now if its rule says the pause has lasted long enough (between
        frames, e.g. when the verdict arrived after the silence it asks for)."""
        silence = self._rule_silence()
        if silence is not None and self._lasted(self.trailing_silence_s, silence):
            return [self._end(truncated=False, reason="rule")]
        return []

    def _lasted(self, silence: float, wait: float) -> bool:
        """Silence is counted in VAD windows (32 ms): a wait ends at the window nearest to it,
        not the first one past it (else a 200 ms wait takes 224 ms, 7 windows, on every turn),
        and a time difference rounded down (0.0639999 s) costs no extra window."""
        return silence >= wait - self._window_s / 2

    def _rule_silence(self) -> float | None:
        rule = self._rule
        if self._utterance is None or rule is None:
            return None
        utterance_id, voiced_end, silence_s = rule
        if utterance_id != self._utterance_id or voiced_end != self._last_voiced_end:
            return None
        return silence_s

    def utterance_audio(self, samples: int | None = None) -> np.ndarray:
        """The current utterance so far (optionally only its first ``samples``)."""
        if self._utterance is None:
            return np.zeros(0, dtype=np.float32)
        audio = np.concatenate(self._utterance) if self._utterance else np.zeros(0, np.float32)
        return audio if samples is None else audio[:samples]

    def process(self, samples: np.ndarray, *, pair: bool = False) -> list[SegmentEvent]:
        """Run the whole windows now pending; with ``pair`` a lone one mid-word may wait."""
        events: list[SegmentEvent] = []
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        usable = self._pending.size - self._pending.size % self._window
        if pair and usable == self._window and self._sure and not self._waiting:
            self._waiting = True  # once: the next call runs it, whatever it brings
            self.paired += 1
            return events
        self._waiting = False
        for offset in range(0, usable, self._window):
            self._window_step(self._pending[offset : offset + self._window], events)
        self._pending = self._pending[usable:].copy()
        return events

    def flush(self) -> list[SegmentEvent]:
        """End of input: close an utterance in progress."""
        events: list[SegmentEvent] = []
        if self._utterance is not None:
            events.append(self._end(truncated=False, reason="flush"))
        return events

    def _window_step(self, window: np.ndarray, events: list[SegmentEvent]) -> None:
        self._processed += window.size
        end = self.stream_time
        probability = self._vad.probability(window)
        if self._utterance is None:
            if probability >= self._threshold:
                self._candidate.append(window)
                if len(self._candidate) >= self._min_windows:
                    self._begin(end, events)
            else:
                self._preroll.extend(self._candidate)
                self._preroll.append(window)
                self._candidate.clear()
            return
        self._utterance.append(window)
        self._samples_in_utterance += window.size
        self._sure = probability >= _SURE
        if probability >= self._neg_threshold:
            self._last_voiced_end = end
        if end - self._onset >= self._config.max_utterance_s:
            events.append(self._end(truncated=True, reason="max length"))
            return
        silence = end - self._last_voiced_end
        rule = self._rule_silence()
        if self._lasted(silence, self._hangover_s if rule is None else rule):
            events.append(self._end(truncated=False, reason="hangover" if rule is None else "rule"))
            return
        if (
            self._pause_s is not None
            and self._lasted(silence, self._pause_s)
            and self._paused_at != self._last_voiced_end
        ):
            self._paused_at = self._last_voiced_end
            events.append(
                SegmentPause(
                    self._utterance_id, self._last_voiced_end, end, self._samples_in_utterance
                )
            )
        if end >= self._next_progress:
            self._next_progress = end + self._progress_s
            events.append(
                SegmentProgress(
                    self._utterance_id,
                    (end - self._onset) * 1000,
                    end,
                    self._samples_in_utterance,
                    (end - self._last_voiced_end) * 1000,
                )
            )

    def _begin(self, now: float, events: list[SegmentEvent]) -> None:
        self._utterance_id += 1
        self._onset = now - len(self._candidate) * self._window_s
        self._utterance = [*self._preroll, *self._candidate]
        self._samples_in_utterance = sum(w.size for w in self._utterance)
        self._preroll.clear()
        self._candidate.clear()
        self._last_voiced_end = now
        self._next_progress = now
        events.append(SegmentStart(self._utterance_id, self._onset))
        events.append(
            SegmentProgress(
                self._utterance_id, (now - self._onset) * 1000, now, self._samples_in_utterance
            )
        )
        self._next_progress = now + self._progress_s

    def _end(self, *, truncated: bool, reason: str) -> SegmentEnd:
        assert self._utterance is not None
        silence = self.stream_time - self._last_voiced_end
        audio = np.concatenate(self._utterance)
        trailing = self.stream_time - self._last_voiced_end - _TRAILING_KEEP_S
        if not truncated and trailing > 0:
            cut = int(trailing * STT_SAMPLE_RATE)
            kept_tail = audio[audio.size - cut :] if cut else np.zeros(0, np.float32)
            audio = audio[: audio.size - cut] if cut else audio
            for start in range(0, kept_tail.size - self._window + 1, self._window):
                self._preroll.append(kept_tail[start : start + self._window])
        end_time = self.stream_time if truncated else self._last_voiced_end
        event = SegmentEnd(
            self._utterance_id, self._onset, end_time, audio, truncated, reason, silence
        )
        self._utterance = None
        self._rule = None
        self._samples_in_utterance = 0
        self._sure = False
        return event
