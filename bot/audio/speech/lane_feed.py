"""How a ``SpeakerLane``'s audio reaches its VAD segmenter: pushed, or heard in place.

Pushed frames (``push``, from any thread) queue for the lane's pump, which runs 16 kHz
conversion, Silero and segmentation in a worker thread, a window or a batch at a time. That
costs two thread wake-ups per VAD window, and on a quiet machine a wake-up costs more CPU than
the window's VAD (``glyphoxa bench receive``). So the thread that decoded a packet can instead
``hear`` the frame: the segmenter runs right there, and the event loop is woken only for the
segment events. The segmenter's lock keeps both ways in order, and every event batch is handed
to the loop while that lock is held, so the loop sees events in the order the audio was heard.

A Discord client stops sending when its player stops talking, so a heard lane feeds itself
silence in real time once packets stop while an utterance is open: without it the turn would
only end when the player spoke again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.audio.speech.audio import FRAME_BYTES, FRAME_MS, STT_FRAME_BYTES, STT_SAMPLE_RATE

if TYPE_CHECKING:
    from bot.audio.speech.audio import SttInput
    from bot.audio.speech.segmenter import Segmenter, SegmentEvent

__all__ = ["LaneFeed", "Silence"]

log = logging.getLogger("bot.audio.speech.lane")

_FRAME_SIZES = (FRAME_BYTES, STT_FRAME_BYTES)
_FRAME_S = FRAME_MS / 1000
_SILENCE = bytes(STT_FRAME_BYTES)
_GAP_S = 0.1
"""Packets missing this long mean the player stopped talking (Discord sends every 20 ms)."""
_FILL_EVERY_S = 0.25


@dataclass(frozen=True, slots=True)
class Silence:
    """Silence to feed a heard lane whose packets stopped at ``heard_at`` (dropped if a packet
    came after all: then the player was not quiet)."""

    frames: int
    heard_at: float


class LaneFeed:
    """The input half of a ``SpeakerLane``, over the lane state declared below."""

    speaker: str
    dropped_frames: int
    _segmenter: Segmenter
    _input: SttInput
    _loop: asyncio.AbstractEventLoop
    _loop_thread: int
    _frames: asyncio.Queue[bytes | object]
    _max_backlog: int
    _ended: bool
    _error: BaseException | None

    if TYPE_CHECKING:  # provided by SpeakerLane

        def _handle(self, event: SegmentEvent) -> None: ...
        def end_input(self) -> None: ...

    def _init_feed(self) -> None:
        self._front = threading.Lock()
        """Held while the segmenter works (on the socket thread or the pump's worker)."""
        self._queued = 0  # frames and silences handed to the pump ...
        self._taken = 0  # ... and those it processed or dropped (equal: nothing in between)
        self._closed = False
        self._heard_at: float | None = None
        """When the last heard frame arrived (None: this lane is only pushed)."""
        self._heard_stream = 0.0
        """The segmenter's stream time once that frame was through it."""
        self._silence_from = 0.0
        self._silenced = 0
        self._gap_timer: asyncio.TimerHandle | None = None
        self.on_silence: Callable[[int], None] | None = None
        """Called (on the worker) with the number of silent frames the lane fed itself."""

    # --- in -------------------------------------------------------------------------------------
    def push(self, frame: bytes) -> None:
        """Queue one 20 ms frame; safe from any thread; drops (and counts) on a huge backlog."""
        if len(frame) not in _FRAME_SIZES:
            raise ValueError(
                f"expected {FRAME_BYTES}-byte (48 kHz stereo) or {STT_FRAME_BYTES}-byte "
                f"(16 kHz mono) frames, got {len(frame)}"
            )
        with self._front:
            self._queued += 1
        if threading.get_ident() == self._loop_thread:
            self._enqueue(frame)
        else:
            self._loop.call_soon_threadsafe(self._enqueue, frame)

    def hear(self, *frames: bytes) -> bool:
        """The thread that decoded ``frames`` (never the loop's) runs them through the VAD now,
        together: the second runs on the caches the first warmed.

        False when the lane takes no more audio. Frames pushed earlier and not yet processed
        go first: then these are pushed behind them.
        """
        if self._ended or self._error is not None:  # failed: ``end_input`` is on its way
            return False
        if any(len(frame) not in _FRAME_SIZES for frame in frames):
            return False
        self._heard_at = time.monotonic()
        with self._front:
            if self._queued == self._taken:
                try:
                    self._segment(list(frames), last=False, poll=False, pair=True)
                    self._heard_stream = self._segmenter.stream_time
                except Exception as error:  # the lane's reader gets it; the socket thread lives
                    self._error = self._error or error
                    self.end_input()
                return True
        for frame in frames:
            self.push(frame)
        return True

    def _enqueue(self, frame: bytes | Silence) -> None:
        if self._ended or self._frames.qsize() >= self._max_backlog:
            with self._front:
                self._taken += 1
            if not self._ended:
                self.dropped_frames += 1
                if self.dropped_frames % 250 == 1:
                    log.warning(
                        "lane %s: %d frames behind, dropping", self.speaker, self._max_backlog
                    )
            return
        self._frames.put_nowait(frame)

    def _short_of_a_window(self, batch: list[bytes | Silence]) -> bool:
        if any(isinstance(item, Silence) for item in batch):
            return False
        pending = self._segmenter.pending_samples + len(batch) * (STT_FRAME_BYTES // 2)
        return pending < self._segmenter.window_samples

    def _process(self, batch: list[bytes | Silence], last: bool, poll: bool) -> None:
        """Worker thread: the pump's batch (and the end rule, on a poll)."""
        with self._front:
            self._taken += len(batch)
            frames: list[bytes] = []
            for item in batch:
                if not isinstance(item, Silence):
                    frames.append(item)
                elif item.heard_at == self._heard_at:  # no packet came meanwhile
                    frames += [_SILENCE] * item.frames
                    if self.on_silence is not None:
                        self.on_silence(item.frames)
            self._segment(frames, last=last, poll=poll)

    def _segment(self, frames: list[bytes], *, last: bool, poll: bool, pair: bool = False) -> None:
        """With ``_front`` held: 16 kHz mono + VAD; the events go to the loop in that order.
        ``pair``: heard frames, whose lone VAD window may wait for the next (see Segmenter)."""
        events = self._segmenter.poll() if poll else []
        samples = self._input.process(frames, last=last)
        events += self._segmenter.process(samples, pair=pair)
        if last:
            events += self._segmenter.flush()
        if events:
            self._loop.call_soon_threadsafe(self._deliver, events)

    # --- out (event loop) -----------------------------------------------------------------------
    def _deliver(self, events: list[SegmentEvent]) -> None:
        if self._closed:
            return
        for event in events:
            self._handle(event)
        if self._heard_at is not None:
            self._watch_gap(feed=False)  # only when to look again: feeding costs a worker hop

    def _watch_gap(self, feed: bool = True) -> None:
        """A heard lane in an utterance whose packets stopped: feed it the silence so far, and
        again when silence alone next acts (a pause to judge, the end; at least every 0.25 s),
        not every 20 ms: each feed costs a worker hop."""
        if self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None
        heard_at, segmenter = self._heard_at, self._segmenter
        if heard_at is None or self._ended or self._closed or not segmenter.in_speech:
            return
        now = time.monotonic()
        quiet = now - heard_at
        if quiet < _GAP_S:
            self._gap_timer = self._loop.call_at(heard_at + _GAP_S, self._watch_gap)
            return
        if heard_at != self._silence_from:
            self._silence_from, self._silenced = heard_at, 0
        due = int(quiet / _FRAME_S)
        if feed and due > self._silenced:
            with self._front:
                self._queued += 1
            self._enqueue(Silence(due - self._silenced, heard_at))
            self._silenced = due
        acts = segmenter.silence_that_acts_s()
        if acts is None:
            return
        # Trailing silence grows in real time from the last packet's: it acts at ``deadline``.
        deadline = heard_at + acts - (self._heard_stream - segmenter.voiced_end)
        window_s = segmenter.window_samples / STT_SAMPLE_RATE
        wake = min(max(deadline + window_s, now + _FRAME_S), now + _FILL_EVERY_S)
        self._gap_timer = self._loop.call_at(wake, self._watch_gap)

    def _stop_feed(self) -> None:
        self._closed = True
        if self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None
