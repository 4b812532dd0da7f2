"""Judging one lane's pauses: is the player done, and what did they say up to here?

At each pause the segmenter reports (``SegmentPause``), a ``PauseJudge`` has the turn model
score how the utterance so far sounds and, when it sounds finished (or without a model), has
it transcribed, both as ``ENDPOINT`` work (the most urgent on the table); while the table is
busy a breath in the middle of a sentence costs the recognizer nothing, while it is idle the
words are heard at once, alongside the model. The verdict (:mod:`bot.audio.speech.turn_end`) becomes
the end rule of that pause: a finished turn ends after ``complete_ms`` of silence, an unfinished
one after ``incomplete_ms``; words the busy table did not hear at an unfinished-sounding pause
are heard once its silence lasts half of ``unsure_ms``. The turn model answers in tens of
milliseconds, the recognizer takes longer, so a turn that sounds finished ends on the sound
alone; only a short one (shorter than ``short_turn_ms``: "Bartok," also sounds finished) waits
for its words. Words that arrive before the turn ended can still say "not done" (a trailing
"and"). The words heard at the pause are the turn's final transcript when no speech followed,
so recognition runs while the player is silent, not after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bot.audio.speech.scheduler import CpuScheduler, Work
from bot.audio.speech.turn_end import TurnEndPolicy, TurnVerdict
from campaigns.basics import GlyphoxaError

__all__ = ["PauseCheck", "PauseJudge", "TurnModel", "gated"]

log = logging.getLogger(__name__)

#: Words and their recognition time (ms).
Heard = tuple[str, float]
_SAME_S = 0.001  # stream times recomputed from a silence length differ by rounding only


class TurnModel(Protocol):
    """Scores 16 kHz mono audio: the probability that the speaker finished (thread-safe)."""

    def probability(self, audio: np.ndarray) -> float: ...


@contextlib.asynccontextmanager
async def gated(scheduler: CpuScheduler, work: Work, resource: str | None) -> AsyncIterator[None]:
    """The scheduler's slot for local models; remote ones (``resource`` None) cost no CPU."""
    if resource is None:
        yield
        return
    async with scheduler.slot(work, resource):
        yield


@dataclass(slots=True)
class PauseCheck:
    """One judged pause of one utterance (identified by its last voiced audio)."""

    utterance_id: int
    voiced_end: float
    heard: asyncio.Future[Heard]
    """The words up to the pause (a pending future until they are asked for)."""
    draft: asyncio.Future[str]
    """A doubtful transcript's first words (its name slot in doubt), set while its second look
    waits for ``hear_again``: enough to judge whether the turn is over."""
    task: asyncio.Task[None] | None = None
    verdict: TurnVerdict | None = None
    hear_again: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a doubtful transcript may be heard a second time: the turn ended here, or its
    words are a whole question that only waits out ``unsure_ms`` (the second look, ~0.4 s of
    the recognizer, then runs during that wait instead of after it)."""
    started: float = field(default_factory=time.monotonic)

    def matches(self, utterance_id: int, voiced_end: float) -> bool:
        return self.utterance_id == utterance_id and self.voiced_end == voiced_end

    def cancel(self) -> None:
        for task in (self.task, self.heard, self.draft):
            if task is not None and not task.done():
                task.cancel()


class PauseJudge:
    """Runs the pause checks of one lane; the lane applies each verdict to its segmenter."""

    def __init__(
        self,
        *,
        lane: str,
        policy: TurnEndPolicy,
        model: TurnModel | None,
        scheduler: CpuScheduler,
        transcribe: Callable[[np.ndarray, Work, PauseCheck], Coroutine[object, object, Heard]],
        on_verdict: Callable[[PauseCheck, str | None], None],
        table_talk: Callable[[], bool] = lambda: False,
    ) -> None:
        """``table_talk``: whether the lane's player is talking to no NPC just now."""
        self._lane = lane
        self._policy = policy
        self._model = model
        self._scheduler = scheduler
        self._transcribe = transcribe
        self._on_verdict = on_verdict
        self._table_talk = table_talk
        self.current: PauseCheck | None = None
        self._model_failed = False

    @property
    def has_model(self) -> bool:
        return self._model is not None and not self._model_failed

    def pause(
        self, utterance_id: int, voiced_end: float, audio: np.ndarray, spoken_s: float
    ) -> PauseCheck:
        """Start judging a pause after ``spoken_s`` of the utterance (a previous check of
        another pause is dropped)."""
        self.drop()
        loop = asyncio.get_running_loop()
        check = PauseCheck(utterance_id, voiced_end, loop.create_future(), loop.create_future())
        check.task = loop.create_task(
            self._judge(check, audio, spoken_s), name=f"speaker-lane:{self._lane}:pause"
        )
        self.current = check
        return check

    def resumed(self, voiced_end: float) -> None:
        """Voiced audio after the judged pause: its words and verdict are stale."""
        check = self.current
        if check is not None and voiced_end > check.voiced_end + _SAME_S:
            self.drop()

    def drop(self) -> None:
        if self.current is not None:
            self.current.cancel()
            self.current = None

    def take_words(self, utterance_id: int, voiced_end: float) -> asyncio.Future[Heard] | None:
        """The transcript made at the pause that ended this utterance (its final: no speech
        came after it), handed over to the caller; None if none was started."""
        check = self.current
        if check is None or not check.matches(utterance_id, voiced_end):
            return None
        self.current = None
        check.hear_again.set()
        if check.task is not None and not check.task.done():
            check.task.cancel()  # the verdict no longer matters; the words do
        heard = check.heard
        if not isinstance(heard, asyncio.Task) or heard.cancelled():
            return None  # never asked for (the turn sounded unfinished)
        return heard

    async def _judge(self, check: PauseCheck, audio: np.ndarray, spoken_s: float) -> None:
        """The sound (tens of ms) decides; the words are heard alongside it when the CPU is
        free, else only once it sounds finished (or without a model)."""
        if not self._scheduler.busy_with(Work.ANSWER):
            self._listen(check, audio)  # the CPU is free: hear the words while the model scores
        probability = await self._score(audio) if self.has_model else None
        sound = self._policy.verdict(probability, None, table_talk=self._table_talk())
        if self.has_model and not sound.complete and not isinstance(check.heard, asyncio.Task):
            check.verdict = sound
            self._on_verdict(check, "")  # reported without words
            if self._table_talk():
                return  # nobody waits for an answer: the final transcribes the turn
            # A pause that lasts is rarely a breath: hear its words after all, in time for a
            # whole question the model is unsure of to end after ``unsure_ms``, not after
            # ``incomplete_ms`` (speech in between cancels this task first).
            await asyncio.sleep(self._late_listen_s(check))
        self._listen(check, audio)
        if sound.complete and spoken_s * 1000 >= self._policy.config.short_turn_ms:
            check.verdict = sound
            self._on_verdict(check, None)  # ends on the sound; the words may still veto it
        try:
            text = await self._words(check)
        except asyncio.CancelledError:
            raise
        except GlyphoxaError as error:  # judged on the sound alone; the final will say more
            log.warning("pause transcript for %s failed: %s", self._lane, error)
            text = ""
        table_talk = self._table_talk()
        if self.has_model:
            check.verdict = self._policy.verdict(probability, text, table_talk=table_talk)
        else:
            check.verdict = self._policy.fallback()
        if check.verdict.whole_question and not table_talk:
            check.hear_again.set()  # someone waits for this answer: hear it again now
        self._on_verdict(check, text)

    @staticmethod
    async def _words(check: PauseCheck) -> str:
        """The words up to the pause, or, when they are in doubt, their first look's (their
        second look waits for the verdict these words give, so it cannot give it)."""
        waiting: set[asyncio.Future[Any]] = {check.heard, check.draft}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)  # never cancels them
        if check.heard.done():
            text, _ms = check.heard.result()
            return text
        return check.draft.result()

    def _late_listen_s(self, check: PauseCheck) -> float:
        """How much longer to wait, from now, until the silence after ``check``'s pause has
        lasted half of ``unsure_ms`` (the words then take 150-400 ms)."""
        config = self._policy.config
        already_s = config.pause_ms / 1000 + (time.monotonic() - check.started)
        return max(0.0, config.unsure_ms / 2000 - already_s)

    def _listen(self, check: PauseCheck, audio: np.ndarray) -> None:
        """Transcribe the words up to the pause (once)."""
        if not isinstance(check.heard, asyncio.Task):
            check.heard = asyncio.get_running_loop().create_task(
                self._transcribe(audio, Work.ENDPOINT, check),
                name=f"speaker-lane:{self._lane}:pause-stt",
            )

    async def _score(self, audio: np.ndarray) -> float | None:
        model = self._model
        assert model is not None
        try:
            async with self._scheduler.slot(Work.ENDPOINT, "turn-model"):
                return await asyncio.to_thread(model.probability, audio)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the plain hangover takes over, loudly, once
            self._model_failed = True
            log.error(
                "turn model failed for %s (%s); turns now end after the VAD hangover. Fix: "
                "glyphoxa doctor --only turn",
                self._lane,
                error,
            )
            return None
