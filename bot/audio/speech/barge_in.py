"""Barge-in: a player talking over an NPC stops the NPC within one frame.

Fed the lane events of every player, the controller cuts the floor holder once a player has
spoken for the confirm window (default 250 ms) *and* the speech is known not to be a
backchannel: a partial transcript with a real word, or speech longer than any "mhm"
(``backchannel_max_ms``). The cancelled handle keeps the record of what was heard; the callback
lets the table session cancel the NPC's engine turn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.audio.speech.backchannel import BackchannelDetector
from bot.audio.speech.events import (
    Backchannel,
    FinalTranscript,
    LaneEvent,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
)
from bot.audio.speech.handle import SpeechResult
from bot.audio.speech.mixer import Mixer

__all__ = ["BargeIn", "BargeInController"]

log = logging.getLogger(__name__)

DEFAULT_BACKCHANNELS = ("mhm", "mm", "uh-huh", "yeah", "yep", "ok", "okay", "right", "hmm")


@dataclass(frozen=True, slots=True)
class BargeIn:
    """A player cut an NPC off; ``heard`` says what the NPC had actually said."""

    speaker: str
    utterance_id: int
    npc: str
    heard: SpeechResult
    wall_time: float


@dataclass(slots=True)
class _Talk:
    utterance_id: int
    voiced_ms: float = 0.0
    text: str = ""
    fired: bool = False


class BargeInController:
    """Observe lane events; cancel the audible NPC when a player really talks over it."""

    def __init__(
        self,
        mixer: Mixer,
        *,
        confirm_ms: float = 250.0,
        backchannel_max_ms: float = 700.0,
        backchannels: Iterable[str] = DEFAULT_BACKCHANNELS,
        require_words: bool = True,
        on_barge_in: Callable[[BargeIn], None] | None = None,
    ) -> None:
        self._mixer = mixer
        self.confirm_ms = confirm_ms
        self.backchannel_max_ms = backchannel_max_ms
        self.require_words = require_words
        self._detector = BackchannelDetector(backchannels)
        self._on_barge_in = on_barge_in
        self._talks: dict[str, _Talk] = {}
        self.history: list[BargeIn] = []

    def observe(self, event: LaneEvent) -> BargeIn | None:
        """Feed every lane event in order; returns the barge-in if this event triggered one."""
        speaker = event.speaker
        if isinstance(event, SpeechStarted):
            self._talks[speaker] = _Talk(event.utterance_id)
            return None
        talk = self._talks.get(speaker)
        if talk is None or talk.utterance_id != event.utterance_id:
            return None
        if isinstance(event, SpeechProgress):
            talk.voiced_ms = event.voiced_ms
        elif isinstance(event, PartialTranscript):
            talk.text = event.text
        elif isinstance(event, SpeechEnded | FinalTranscript | Backchannel):
            del self._talks[speaker]
            return None
        return self._check(speaker, talk)

    def _check(self, speaker: str, talk: _Talk) -> BargeIn | None:
        if talk.fired or talk.voiced_ms < self.confirm_ms:
            return None
        if (
            self.require_words
            and not self._detector.has_content(talk.text)
            and talk.voiced_ms < self.backchannel_max_ms
        ):
            return None
        handle = self._mixer.current
        if handle is None or handle.playback_started_at is None or handle.done():
            return None
        handle.cancel()
        talk.fired = True
        barge = BargeIn(speaker, talk.utterance_id, handle.npc, handle.result(), time.monotonic())
        self.history.append(barge)
        log.info("barge-in by %s over %s; heard: %r", speaker, handle.npc, barge.heard.played_text)
        if self._on_barge_in is not None:
            self._on_barge_in(barge)
        return barge
