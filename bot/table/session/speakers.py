"""The players of one table: a ``SpeakerLane`` each, opened on their first frame.

``SpeakerLanes`` keeps each speaker's bookkeeping (speaking, utterances awaiting their final,
stream clock) and hands every lane event to the session once that bookkeeping is done. The
lanes share the table's CPU scheduler and turn model. ``Speaker`` holds what the session
guesses at a judged pause: the speculative answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.audio.speech import (
    Backchannel,
    FinalTranscript,
    LaneEvent,
    SpeakerLane,
    SpeechEnded,
    SpeechStarted,
    SttProvider,
    Vocabulary,
)
from bot.audio.speech.endpointing import TurnModel
from bot.audio.speech.scheduler import CpuScheduler
from bot.settings.config import SpeechConfig
from bot.table.session.speculation import Speculation
from bot.table.session.timing import StreamClock, TimedStt
from bot.telemetry.metrics import Metrics
from campaigns.basics import GlyphoxaError

__all__ = ["Speaker", "SpeakerLanes"]

log = logging.getLogger(__name__)

_FINAL_EXPIRY_S = 15.0  # an utterance with no words yields no final; stop waiting for it


@dataclass(slots=True)
class Speaker:
    id: str
    name: str
    lane: SpeakerLane
    stt: TimedStt
    clock: StreamClock
    task: asyncio.Task[None] | None = None
    speaking: bool = False
    partial_tier: str | None = None
    awaiting: dict[int, float] = field(default_factory=dict)
    """Utterances that ended and whose final transcript has not arrived (id -> end time)."""
    utterance_id: int = 0
    onset: float = 0.0
    """Stream time at which the current utterance started."""
    last_partial: str | None = None
    speculation: Speculation | None = None
    last_line: tuple[float, tuple[str, ...]] | None = None
    """When the speaker's last routed line ended (wall clock) and which NPCs it went to."""
    unheard: tuple[str, str] | None = None
    """(NPC, line): the speaker talked over the answer to their own line before a word of it
    was heard; if what they said is that NPC's name, the line is answered again, whole."""
    display_name: str = ""
    """The name the player joined with (Discord's display name); ``name`` is their character
    when one is bound."""

    def drop_speculation(self, utterance_id: int | None = None) -> None:
        """Cancel the speculative answer (only if it was for ``utterance_id``, when given)."""
        spec = self.speculation
        if spec is not None and (utterance_id is None or spec.utterance_id == utterance_id):
            spec.cancel()
            self.speculation = None


class SpeakerLanes:
    """Every speaker's lane of one table, and the reader task of each."""

    def __init__(
        self,
        *,
        stt: SttProvider,
        config: SpeechConfig,
        metrics: Metrics,
        vocabulary: Vocabulary,
        vad_factory: Callable[[], Any] | None,
        spawn: Callable[[Any, str], asyncio.Task[Any]],
        on_event: Callable[[Speaker, LaneEvent], None],
        scheduler: CpuScheduler,
        turn_model: TurnModel | None = None,
    ) -> None:
        self._stt = stt
        self._config = config
        self._metrics = metrics
        self.vocabulary = vocabulary
        self._vad_factory = vad_factory
        self._spawn = spawn
        self._on_event = on_event
        self.scheduler = scheduler
        self.turn_model = turn_model
        self._speakers: dict[str, Speaker] = {}

    def get(self, speaker_id: str) -> Speaker | None:
        return self._speakers.get(speaker_id)

    def __iter__(self) -> Iterator[Speaker]:
        return iter(list(self._speakers.values()))

    @property
    def listening(self) -> bool:
        """A player is speaking, or an utterance's final transcript is still being made."""
        return self.listening_except(())

    def listening_except(self, names: Iterable[str]) -> bool:
        """``listening``, not counting the players named (e.g. a rehearsal's table talk)."""
        horizon = time.monotonic() - _FINAL_EXPIRY_S
        ignored = set(names)
        return any(
            s.speaking or any(at > horizon for at in s.awaiting.values())
            for s in self._speakers.values()
            if s.name not in ignored
        )

    def set_vocabulary(self, vocabulary: Vocabulary) -> None:
        """New NPC names: lanes opened from now on and every open lane recognise them."""
        self.vocabulary = vocabulary
        for speaker in self._speakers.values():
            speaker.lane.set_vocabulary(vocabulary)

    # --- input -------------------------------------------------------------------------------
    def push(
        self, speaker_id: str, user_name: str, frame: bytes, *, display_name: str | None = None
    ) -> None:
        """One frame on the event loop; ``user_name`` names a new lane (their character, or
        ``display_name``, which defaults to it)."""
        speaker = self._speakers.get(speaker_id)
        if speaker is None:
            speaker = self._open(speaker_id, user_name)
            speaker.display_name = display_name or user_name
        speaker.lane.push(frame)
        speaker.clock.record(time.monotonic())

    def hear(self, speaker_id: str, frames: Sequence[bytes]) -> bool:
        """Frames on the thread that decoded them (False: the speaker has no open lane)."""
        speaker = self._speakers.get(speaker_id)
        if speaker is None or not speaker.lane.hear(*frames):
            return False
        speaker.clock.record(time.monotonic(), len(frames))
        return True

    def _open(self, speaker_id: str, user_name: str) -> Speaker:
        stt = TimedStt(self._stt, self._metrics)
        lane = SpeakerLane(
            speaker_id,
            stt=stt,
            config=self._config,
            vad=self._vad_factory() if self._vad_factory else None,
            vocabulary=self.vocabulary,
            scheduler=self.scheduler,
            turn_model=self.turn_model,
        )
        clock = StreamClock()
        lane.on_silence = lambda frames: clock.record(time.monotonic(), frames)
        speaker = Speaker(speaker_id, user_name, lane, stt, clock)
        self._speakers[speaker_id] = speaker
        speaker.task = self._spawn(self._read(speaker), f"table:lane:{user_name}")
        log.info("new speaker %s (%s)", user_name, speaker_id)
        return speaker

    async def _read(self, speaker: Speaker) -> None:
        try:
            async for event in speaker.lane:
                if isinstance(event, SpeechStarted):
                    speaker.utterance_id = event.utterance_id
                    speaker.onset = event.stream_time
                    speaker.last_partial = None
                    self._set_speaking(speaker, True)
                elif isinstance(event, SpeechEnded):
                    speaker.awaiting[event.utterance_id] = time.monotonic()
                    self._set_speaking(speaker, False)
                elif isinstance(event, FinalTranscript):
                    speaker.awaiting.pop(event.utterance_id, None)
                elif isinstance(event, Backchannel):
                    speaker.awaiting.pop(event.utterance_id, None)
                self._on_event(speaker, event)
        except GlyphoxaError as error:
            log.error("lane of %s stopped: %s", speaker.name, error)
        finally:
            self._set_speaking(speaker, False)

    def _set_speaking(self, speaker: Speaker, speaking: bool) -> None:
        speaker.speaking = speaking
        self._metrics.active_speakers.set(sum(s.speaking for s in self._speakers.values()))

    # --- the end -----------------------------------------------------------------------------
    async def end_input(self) -> None:
        """No more audio from anyone: lanes emit their last finals, then their readers end."""
        for speaker in self._speakers.values():
            speaker.lane.end_input()
        readers = [s.task for s in self._speakers.values() if s.task is not None]
        if readers:
            await asyncio.gather(*readers, return_exceptions=True)

    async def aclose(self) -> None:
        """Close every lane now (pending finals are dropped; the readers then end)."""
        for speaker in self._speakers.values():
            await speaker.lane.aclose()
