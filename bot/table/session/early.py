"""``EarlyAnswers``: work on an answer before the player's line is final.

Two ways to be early: while a player talks, the addressed NPC's prompt is evaluated ahead (a
local LLM's prompt cache, ``prefill``); on a judged pause, the answer itself starts on the words
so far (``guess``, a ``Speculation`` the final adopts when it says the same). Routing decides
whom and at which tier; this part does the work and owns the policy (on or off, per NPC and
tier) and when talking on after the pause drops the guess.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from bot.table.session.speculation import Speculation

if TYPE_CHECKING:
    import asyncio
    from typing import Any

    from bot.audio.speech import SpeechProgress
    from bot.audio.speech.scheduler import CpuScheduler
    from bot.table.session.entities import EntityLookup
    from bot.table.session.prefill import Prefiller
    from bot.table.session.speakers import Speaker
    from bot.table.session.timing import TimedTts
    from campaigns.basics import Tier
    from npcs.context import SceneLine
    from npcs.engines import Engine
    from npcs.schema import NpcDefinition

__all__ = ["EarlyAnswers"]

#: A policy per NPC and tier, or one answer for all.
SpeculatePolicy = bool | Callable[["NpcDefinition", "Tier"], bool]


class EarlyAnswers:
    """Prefills and speculative answers of one table.

    Args:
        prefiller: evaluates an NPC's prompt while the player talks.
        entities: the campaign facts an early prompt includes.
        scene_for: the scene as a speaker had heard it when their line began.
        scheduler: orders the table's CPU work (a guess's voice steps back for answers).
        tts: voices a guess's first sentence ahead.
        adopt: the session owns (and cancels) each guess's task.
        speculate: guess answers on a judged pause (or decide per NPC and tier).
        resume_ms: speech this soon after a judged pause goes on with the line (the guess on
            it is dropped).
    """

    def __init__(
        self,
        *,
        prefiller: Prefiller,
        entities: EntityLookup,
        scene_for: Callable[[str], list[SceneLine]],
        scheduler: CpuScheduler,
        tts: TimedTts,
        adopt: Callable[[asyncio.Task[Any]], None],
        speculate: SpeculatePolicy,
        resume_ms: float,
    ) -> None:
        self._prefiller = prefiller
        self._entities = entities
        self._scene_for = scene_for
        self._scheduler = scheduler
        self._tts = tts
        self._adopt = adopt
        self.speculate = bool(speculate)
        """Guess answers on judged pauses at all."""
        self._may_speculate = speculate if callable(speculate) else None
        self._resume_ms = resume_ms

    @property
    def prefilling(self) -> bool:
        """Prompts are evaluated ahead at this table."""
        return self._prefiller.enabled

    def talked_on(self, speaker: Speaker, event: SpeechProgress) -> None:
        """The player speaks again: soon after a judged pause, the guess on it is dropped."""
        if speaker.speculation is not None and event.trailing_silence_ms < self._resume_ms:
            speaker.drop_speculation(event.utterance_id)  # talking on after the pause

    def prefill(self, npc: NpcDefinition, speaker: str, tier: Tier, text: str) -> None:
        """Evaluate ``npc``'s prompt for ``speaker``'s words so far."""
        snapshot = partial(self._entities.snapshot, text, exclude=npc.name)
        self._prefiller.ahead(npc, speaker, tier, self._scene_for(speaker), text, snapshot)

    def guess(
        self,
        speaker: Speaker,
        npc: NpcDefinition,
        engine: Engine,
        tier: Tier,
        text: str,
        brief: str | None,
    ) -> None:
        """Start ``npc``'s answer to ``speaker``'s words so far (``text``) at ``tier``, told
        ``brief`` (what the DM asks of it), unless the policy says not for this NPC and tier."""
        if self._may_speculate is not None and not self._may_speculate(npc, tier):
            return
        spec = Speculation(
            speaker.name,
            speaker.utterance_id,
            npc.name,
            text,
            tier,
            snapshot=partial(self._entities.snapshot, text, exclude=npc.name),
            scheduler=self._scheduler,
            brief=brief,
        )
        speaker.speculation = spec.start(engine, npc, self._scene_for(speaker.name), tts=self._tts)
        if spec.task is not None:
            self._adopt(spec.task)
