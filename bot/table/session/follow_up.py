"""``AnswerFollowUp``: what a table does when an NPC's answer is written and when it ends.

Written (all its words voiced, still playing): queue a reaction if one is due, else prepare the
reply to it (a local LLM evaluates the prompt while the answer plays). Ended: keep its trace and
metrics, put the words heard into the scene and memory, prepare the player's reply, and tell the
table (``NpcSpoke``; a failed turn also reaches the DM).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.table.session.events import NpcSpoke
from npcs.context import SceneLine

if TYPE_CHECKING:
    from bot.table.session.alerts import TroubleDesk
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.parts import Cast, Record
    from bot.table.session.prefill import Prefiller
    from bot.table.session.reactions import Reactions
    from bot.table.session.seams import EventSink
    from bot.table.session.trace import TurnTrace
    from bot.table.session.turns import NpcTurn
    from bot.telemetry.metrics import Metrics

__all__ = ["AnswerFollowUp"]


class AnswerFollowUp:
    """Follows each NPC turn of one table as it is written and as it ends.

    Args:
        cast: the NPCs (whose prompt to prepare) and the tier a reply would get.
        record: the scene the answer joins, the transcript in campaign memory, where each
            turn's end is told.
        turns: the queues (a prefill never delays an answer that is due).
        prefiller: prepares the reply's prompt.
        reactions: asked for a reaction to each written answer; told each turn's end.
        trouble: tells the DM of a failed turn.
        metrics: per-stage latency and turn outcomes.
        traces: the table's finished turns (appended here).
    """

    def __init__(
        self,
        *,
        cast: Cast,
        record: Record,
        turns: NpcQueues,
        prefiller: Prefiller,
        reactions: Reactions,
        trouble: TroubleDesk,
        metrics: Metrics,
        traces: list[TurnTrace],
    ) -> None:
        self._campaign = cast.campaign
        self._tiers = cast.tiers
        self._scene = record.scene
        self._recorder = record.recorder
        self._events: EventSink = record.events
        self._turns = turns
        self._prefiller = prefiller
        self._reactions = reactions
        self._trouble = trouble
        self._metrics = metrics
        self._traces = traces

    def written(self, turn: NpcTurn) -> None:
        """The answer is written but still playing: queue a reaction to it if one is due, else
        prepare the reply to it now, with the answer as the scene's next line. When the scene
        window moves, that is a few hundred tokens, which on a small CPU take longer than a
        player leaves between the end of an answer and the end of their reply. After a
        barge-in, the reply's turn evaluates again from the answer's line.

        The line is the voiced sentences as the transcript will hold them, not the model's raw
        reply: a reply's line breaks (joined by spaces once spoken) or a filler put the prompt
        off from that point, and the reply's turn evaluated ~100 tokens again."""
        voiced = turn.handle.full_text
        if self._reactions.react_to(turn) or not voiced:
            return
        line = SceneLine(turn.npc, voiced, turn.npc, time.monotonic())
        self._prefill_reply(turn, line.at, self._scene.with_next(line))

    def done(self, turn: NpcTurn) -> None:
        """The turn ended (finished, cut off or failed): keep it, and tell the table."""
        trace = turn.trace
        self._traces.append(trace)
        if trace.playback_start is not None:
            self._metrics.observe_turn(trace.stages_ms())
        outcome = "failed" if trace.error else "interrupted" if trace.interrupted else "done"
        self._metrics.turns.labels(outcome, trace.tier).inc()
        self._metrics.observe_speech(trace.repairs, trace.budget_hit)
        self._reactions.answer_ended(turn)
        now = time.monotonic()
        if trace.spoken:
            self._scene.add(SceneLine(turn.npc, trace.spoken, turn.npc, now))
            self._prefill_reply(turn, now)
            self._recorder.npc(
                turn.npc,
                trace.spoken,
                trace.playback_start or now,
                now,
                tier=trace.tier,
                interrupted=trace.interrupted,
                stages=trace.stages_ms() if trace.heard and trace.playback_start else None,
            )
        self._events.emit(NpcSpoke(trace, now))
        self._trouble.turn_failed(trace)

    def _prefill_reply(
        self, turn: NpcTurn, now: float, scene: Sequence[SceneLine] | None = None
    ) -> None:
        """The NPC finished: its player often answers right back, so prepare that turn."""
        npc = self._campaign.npcs.get(turn.npc)
        others = [t for t in self._turns.running() if t is not turn]
        if npc is None or others or self._turns.depth():
            return  # another answer is due next: it must not wait behind a prefill
        tier = self._tiers.select("", npc=npc, queue_depth=0, now=now).tier
        self._prefiller.ahead(npc, turn.speaker, tier, self._scene.shown(scene))
