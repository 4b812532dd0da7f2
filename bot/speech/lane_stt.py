"""The transcription half of a ``SpeakerLane``: partials, finals, and the words of a pause.

A part of ``SpeakerLane`` (as ``Routing`` is of the table session): it reads the lane state
declared below. Every recognition goes through the table's CPU scheduler: finals and the words
heard at a pause as ``ENDPOINT`` work (for players talking among themselves a final and any
second look as ``ASIDE``), partials as ``PARTIAL`` (a player talking to an NPC) or ``CHATTER``
(players among themselves), which never wait and are skipped while the CPU is busy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from bot.speech.endpointing import Heard, gated
from bot.speech.events import Backchannel, FinalTranscript, PartialTranscript, SpeechEnded
from bot.speech.protocols import SttProvider, TwoLookStt
from bot.speech.scheduler import CpuScheduler, Skipped, Work
from campaigns.errors import GlyphoxaError

if TYPE_CHECKING:
    from bot.config import SpeechConfig
    from bot.speech.backchannel import BackchannelDetector
    from bot.speech.events import LaneEvent
    from bot.speech.segmenter import Segmenter, SegmentProgress
    from bot.speech.vocabulary import Vocabulary

__all__ = ["LANE_END", "LaneTranscription"]

log = logging.getLogger(__name__)

#: Trailing silence from which no partial starts: two silent VAD windows (where the pause is
#: judged) mean the player may be done, and a partial started now would hold up the final.
_FINISHING_MS = 60.0

LANE_END = object()
"""Ends a lane's event stream (and its input queue)."""


class LaneTranscription:
    """Partials and finals of one lane, over the lane state declared below."""

    speaker: str
    scheduler: CpuScheduler
    addressing: bool | None
    skipped_partials: int
    _config: SpeechConfig
    _stt: SttProvider
    _stt_resource: str | None
    _vocabulary: Vocabulary | None
    _backchannels: BackchannelDetector
    _segmenter: Segmenter
    _loop: asyncio.AbstractEventLoop
    _partial_task: asyncio.Task[None] | None
    _last_partial_at: float
    _last_partial_text: str
    _error: BaseException | None

    if TYPE_CHECKING:  # provided by SpeakerLane

        def _emit(self, event: LaneEvent) -> None: ...

    @property
    def table_talk(self) -> bool:
        """The player is talking among themselves: their partials named no NPC (the table sets
        ``addressing``; None until a partial says)."""
        return self.addressing is False

    async def _transcribe(self, audio: np.ndarray, work: Work) -> Heard:
        """Words (vocabulary-corrected) and recognition time, in ``work``'s turn; a final's
        second look is a job of its own, so another lane's final can go between the two. For a
        player talking among themselves both wait as ``ASIDE`` work."""
        aside = work == Work.ENDPOINT and self.table_talk
        return await self._heard(audio, Work.ASIDE if aside else work, aside)

    async def _pause_words(self, audio: np.ndarray, work: Work) -> Heard:
        """The words at a pause: heard at once even in table talk, since they may still say
        the player is not done ("Fair enough." is a word or two: wait longer); only a second
        look waits as ``ASIDE`` work."""
        aside = work == Work.ENDPOINT and self.table_talk
        return await self._heard(audio, work, aside)

    async def _heard(self, audio: np.ndarray, work: Work, aside: bool) -> Heard:
        stt = self._stt
        if work >= Work.PARTIAL or not isinstance(stt, TwoLookStt):
            async with gated(self.scheduler, work, self._stt_resource):
                started = time.perf_counter()
                text = await stt.transcribe(
                    audio, partial=work >= Work.PARTIAL, vocabulary=self._vocabulary
                )
                return self._correct(text), (time.perf_counter() - started) * 1000.0
        async with gated(self.scheduler, work, self._stt_resource):
            started = time.perf_counter()
            first = await stt.first_look(audio, vocabulary=self._vocabulary)
            spent = time.perf_counter() - started
        if not first.doubtful:
            return self._correct(first.text), spent * 1000.0
        async with gated(self.scheduler, Work.ASIDE if aside else work, self._stt_resource):
            started = time.perf_counter()
            text = await stt.second_look(audio, first, vocabulary=self._vocabulary)
            spent += time.perf_counter() - started
        return self._correct(text), spent * 1000.0

    def _maybe_partial(self, event: SegmentProgress) -> None:
        work = Work.CHATTER if self.table_talk else Work.PARTIAL
        base = self._config.partial_interval_ms / 1000
        if event.stream_time - self._last_partial_at < self.scheduler.partial_interval(base, work):
            return
        if event.trailing_silence_ms >= _FINISHING_MS:
            return  # the player may be finishing: keep the recognizer free for the final
        if self._partial_task is not None and not self._partial_task.done():
            return  # the previous partial is still running: skip, never queue
        if self._segmenter.utterance_id != event.utterance_id or not self._segmenter.in_speech:
            return  # already ended within this batch; the final is coming
        self._last_partial_at = event.stream_time
        audio = self._segmenter.utterance_audio(event.audio_samples)
        self._partial_task = self._loop.create_task(
            self._partial(event, audio, work), name=f"speaker-lane:{self.speaker}:partial"
        )

    async def _partial(self, event: SegmentProgress, audio: np.ndarray, work: Work) -> None:
        try:
            text, _ms = await self._transcribe(audio, work)
        except Skipped:
            self.skipped_partials += 1
            return
        except Exception as error:  # partials are best effort; the final reports failures
            log.warning("partial transcription failed for %s: %s", self.speaker, error)
            return
        still_speaking = (
            self._segmenter.in_speech and self._segmenter.utterance_id == event.utterance_id
        )
        if text and text != self._last_partial_text and still_speaking:
            self._last_partial_text = text
            self._emit(
                PartialTranscript(
                    self.speaker, event.utterance_id, text, event.stream_time, time.monotonic()
                )
            )

    async def _final(
        self,
        ended: SpeechEnded,
        audio: np.ndarray,
        previous: asyncio.Task[None] | None,
        reused: asyncio.Future[Heard] | None,
    ) -> None:
        try:
            text, stt_ms = await self._words(audio, reused)
            if previous is not None:
                await asyncio.shield(previous)  # finals leave in utterance order
        except asyncio.CancelledError:
            raise
        except GlyphoxaError as error:  # a service hiccup loses this turn, not the lane
            log.error("transcription failed for %s: %s", self.speaker, error)
            return
        except BaseException as error:
            self._error = self._error or error
            self._emit(LANE_END)  # type: ignore[arg-type]
            raise
        now = time.monotonic()
        if not text:
            log.debug("utterance %d of %s had no words", ended.utterance_id, self.speaker)
        elif self._backchannels.is_backchannel(text):
            self._emit(Backchannel(self.speaker, ended.utterance_id, text, now))
        else:
            self._emit(
                FinalTranscript(
                    self.speaker,
                    ended.utterance_id,
                    text,
                    ended.started_at,
                    ended.stream_time,
                    now,
                    ended.wall_time,
                    ended.truncated,
                    round(stt_ms, 2),
                )
            )

    async def _words(self, audio: np.ndarray, reused: asyncio.Future[Heard] | None) -> Heard:
        """The words heard at the pause that ended the turn, else a fresh transcription."""
        if reused is not None:
            try:
                return await reused
            except GlyphoxaError:
                pass  # heard again below
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not reused.cancelled() or (current is not None and current.cancelling()):
                    raise
        return await self._transcribe(audio, Work.ENDPOINT)

    def _correct(self, text: str) -> str:
        text = " ".join(text.split())
        return self._vocabulary.correct(text) if self._vocabulary else text
