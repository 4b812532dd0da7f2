"""The transcription half of a ``SpeakerLane``: partials, finals, and the words of a pause.

A part of ``SpeakerLane`` (a mixin on the lane's hot path): it reads the lane state
declared below. Every recognition goes through the table's CPU scheduler: finals and the words
heard at a pause as ``ENDPOINT`` work (for players talking among themselves a final and any
second look as ``ASIDE``), partials as ``PARTIAL`` (a player talking to an NPC) or ``CHATTER``
(players among themselves), which never wait and are skipped while the CPU is busy. A partial
to an NPC that opens with a slot naming nobody starts the utterance's slot look
(``bot.audio.speech.name_slot``), which a doubtful final may take its name from.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import numpy as np

from bot.audio.speech.endpointing import Heard, PauseCheck, gated
from bot.audio.speech.events import Backchannel, FinalTranscript, PartialTranscript, SpeechEnded
from bot.audio.speech.name_slot import SlotLook
from bot.audio.speech.protocols import FirstLook, SttProvider, TwoLookStt
from bot.audio.speech.scheduler import CpuScheduler, Skipped, Work
from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:
    from bot.audio.speech.backchannel import BackchannelDetector
    from bot.audio.speech.events import LaneEvent
    from bot.audio.speech.segmenter import Segmenter, SegmentProgress
    from bot.audio.speech.vocabulary import Vocabulary
    from bot.settings.config import SpeechConfig

__all__ = ["FINISHING_MS", "LANE_END", "LaneTranscription"]

log = logging.getLogger(__name__)

#: Trailing silence from which no partial starts (at most; never later than the pause is
#: judged): the player may be done, and a partial started now would hold up the final.
FINISHING_MS = 60.0

LANE_END = object()
"""Ends a lane's event stream (and its input queue)."""


class LaneTranscription:
    """Partials and finals of one lane, over the lane state declared below."""

    speaker: str
    scheduler: CpuScheduler
    addressing: bool | None
    skipped_partials: int
    named_early: int
    """Finals whose opening name came from the slot look, not a second look after the turn."""
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
    _finishing_ms: float
    """Trailing silence from which no partial starts (``FINISHING_MS`` or the pause, if sooner)."""
    _slot_look: SlotLook | None
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

    async def _pause_words(self, audio: np.ndarray, work: Work, check: PauseCheck) -> Heard:
        """The words at a pause: heard at once even in table talk, since they may still say
        the player is not done ("Fair enough." is a word or two: wait longer). A second look
        waits until the turn ended at this pause, or until its first look's words were judged
        a whole question (most pauses are breaths, and a second look costs 0.4 s of the
        recognizer), then as ``ASIDE`` work in table talk; meanwhile the first look's words are
        the check's ``draft``, to judge the pause by."""
        aside = work == Work.ENDPOINT and self.table_talk
        return await self._heard(audio, work, aside, check)

    async def _heard(
        self, audio: np.ndarray, work: Work, aside: bool, check: PauseCheck | None = None
    ) -> Heard:
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
        if (named := await self._named_early(audio, first)) is not None:
            return self._correct(named), spent * 1000.0
        if check is not None:
            if not check.draft.done():
                check.draft.set_result(self._correct(first.text))
            await check.hear_again.wait()  # speech after the pause cancels this task first
        async with gated(self.scheduler, Work.ASIDE if aside else work, self._stt_resource):
            started = time.perf_counter()
            text = await stt.second_look(audio, first, vocabulary=self._vocabulary)
            spent += time.perf_counter() - started
        return self._correct(text), spent * 1000.0

    async def _named_early(self, audio: np.ndarray, first: FirstLook) -> str | None:
        """The doubtful ``first`` look with its opening slot named by this utterance's slot
        look (see ``bot.audio.speech.name_slot``), when it heard an NPC's name there."""
        look = self._slot_look
        if look is None or first.loops or not look.belongs_to(audio) or not self._vocabulary:
            return None
        name = await look.name()
        named = self._vocabulary.with_opening_name(first.text, name) if name else None
        if named is not None:
            self.named_early += 1
            log.debug("%s: %r named early: %r", self.speaker, first.text, named)
        return named

    def _maybe_slot_look(self, text: str, audio: np.ndarray, work: Work) -> None:
        """A partial to an NPC (or to nobody yet) opens with a slot that names nobody: hear
        that slot over the full window now, once per utterance."""
        stt, vocabulary = self._stt, self._vocabulary
        if work != Work.PARTIAL or not isinstance(stt, TwoLookStt) or not vocabulary:
            return
        if self._segmenter.trailing_silence_s * 1000.0 >= self._finishing_ms:
            return  # the player may be done: the turn's own words come first
        look = self._slot_look
        if look is not None and look.belongs_to(audio) and not look.skipped:
            return  # heard, or being heard (a skipped look is tried again)
        if vocabulary.opening_names_nobody(text):
            if look is not None:
                look.cancel()
            self._slot_look = SlotLook(
                stt, vocabulary, self.scheduler, self._stt_resource, audio, text
            )

    def _maybe_partial(self, event: SegmentProgress) -> None:
        work = Work.CHATTER if self.table_talk else Work.PARTIAL
        base = self._config.partial_interval_ms / 1000
        if event.stream_time - self._last_partial_at < self.scheduler.partial_interval(base, work):
            return
        if event.trailing_silence_ms >= self._finishing_ms:
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
            self._maybe_slot_look(text, audio, work)
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
