"""Per-NPC turn queues: one answer at a time per NPC, voices in the order NPCs were addressed.

A turn takes its mixer handle when it is queued, so the floor order is the order of address
even while several NPCs think at once. Each NPC has a worker task that plays its turns one by
one; a barge-in cancels the running turn's task, never the worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot.audio.speech import HandleState, Mixer, TtsProvider
from bot.audio.speech.scheduler import CpuScheduler
from bot.table.session.parts import Cast
from bot.table.session.seats import NpcSeat
from bot.table.session.speculation import Speculation
from bot.table.session.trace import TurnTrace
from bot.table.session.turns import NpcTurn, run_turn
from campaigns.basics import Tier
from campaigns.providers.usage import serving_npc
from npcs.context import SceneLine
from npcs.engines import Engine
from npcs.schema import NpcDefinition

__all__ = ["NpcQueues"]


class NpcQueues:
    """Queues, workers and floor accounting for every NPC of one table (each NPC's queue, worker
    and current turn live on its ``NpcSeat``)."""

    def __init__(
        self,
        *,
        cast: Cast,
        mixer: Mixer,
        engines: Callable[[NpcDefinition], Engine | None],
        tts: TtsProvider,
        scene: Callable[[str], Sequence[SceneLine]],
        spawn: Callable[[Any, str], asyncio.Task[Any]],
        on_done: Callable[[NpcTurn], None],
        on_written: Callable[[NpcTurn], None] | None = None,
        scheduler: CpuScheduler | None = None,
    ) -> None:
        """``cast``: the NPCs and their seats (each holds its NPC's queue, worker and current
        turn); ``on_written`` hears of an answer whose words are all written and voiced, while
        it still plays; ``scheduler`` hears of each answer on its way (optional work steps
        back)."""
        self._mixer = mixer
        self._campaign = cast.campaign
        self._engines = engines
        self._tts = tts
        self._scene = scene
        self._spawn = spawn
        self._on_done = on_done
        self._on_written = on_written
        self._scheduler = scheduler or CpuScheduler()
        self._seats = cast.seats
        mixer.add_listener(self._mixer_changed)

    # --- queries -------------------------------------------------------------------------------
    def depth(self) -> int:
        """Players waiting for an NPC (turns queued, not yet started)."""
        return sum(seat.queue.qsize() for seat in self._seats)

    def busy(self) -> bool:
        return any(seat.busy for seat in self._seats)

    def npc_busy(self, name: str) -> bool:
        seat = self._seats.get(name)
        return seat is not None and seat.busy

    def current(self, name: str) -> NpcTurn | None:
        seat = self._seats.get(name)
        return seat.current if seat is not None else None

    def queued(self, name: str) -> int:
        seat = self._seats.get(name)
        return seat.queue.qsize() if seat is not None else 0

    def names(self) -> list[str]:
        return self._seats.names()

    def engine_for(self, npc: NpcDefinition) -> Engine | None:
        """The engine that answers for ``npc`` at this table (None: it only speaks lines)."""
        return self._engines(npc)

    def running(self) -> list[NpcTurn]:
        return [seat.current for seat in self._seats if seat.current is not None]

    # --- changes -------------------------------------------------------------------------------
    def enqueue(
        self,
        npc: str,
        speaker: str,
        text: str,
        tier: Tier,
        trace: TurnTrace,
        *,
        verbatim: str | None = None,
        snapshot: Callable[[], Any] | None = None,
        speculation: Speculation | None = None,
        direction: str | None = None,
        reacting_to: str | None = None,
        max_sentences: int | None = None,
    ) -> NpcTurn:
        turn = NpcTurn(
            npc=npc,
            speaker=speaker,
            text=text,
            tier=tier,
            trace=trace,
            handle=self._mixer.speak(npc),  # floor order = order of address
            verbatim=verbatim,
            snapshot=snapshot,
            speculation=speculation,
            direction=direction,
            reacting_to=reacting_to,
            max_sentences=max_sentences,
        )
        seat = self._seats.seat(npc)
        seat.queue.put_nowait(turn)
        if seat.worker is None or seat.worker.done():
            seat.worker = self._spawn(self._worker(seat), f"table:npc:{npc}")
        return turn

    def cancel(self, name: str) -> None:
        """Cut what ``name`` says now and drop its queued turns."""
        seat = self._seats.get(name)
        if seat is None:
            return
        while not seat.queue.empty():
            _drop(seat.queue.get_nowait())
        if seat.current is not None:
            seat.current.handle.cancel()
            if seat.current.task is not None:
                seat.current.task.cancel()

    def drop(self, turn: NpcTurn) -> None:
        """Cut one turn (queued or running) and nothing else of its NPC."""
        turn.handle.cancel()
        if turn.task is not None and not turn.task.done():
            turn.task.cancel()
        if turn.speculation is not None:
            turn.speculation.cancel()

    def interrupt(self, name: str) -> None:
        """Barge-in: the mixer already cut the voice; stop the engine turn too."""
        turn = self.current(name)
        if turn is not None and turn.task is not None and not turn.task.done():
            turn.task.cancel()

    # --- workers -------------------------------------------------------------------------------
    async def _worker(self, seat: NpcSeat) -> None:
        serving_npc.set(seat.name)  # this task's calls (its voice too) count toward its cost
        while not seat.queue.empty():
            turn = seat.queue.get_nowait()
            npc = self._campaign.npcs.get(seat.name)
            if npc is None or turn.handle.done():
                _drop(turn)
                continue
            seat.current = turn
            turn.trace.dequeued = time.monotonic()
            try:
                await self._play(turn, npc)
            finally:
                seat.current = None

    async def _play(self, turn: NpcTurn, npc: NpcDefinition) -> None:
        engine = None if turn.verbatim is not None else self._engines(npc)
        if engine is None and turn.verbatim is None:
            turn.trace.error = f"no engine for {npc.name} ({npc.engine.value})"
        turn.task = asyncio.create_task(
            run_turn(
                turn, npc=npc, engine=engine, tts=self._tts, scene=tuple(self._scene(turn.speaker))
            ),
            name=f"table:turn:{turn.trace.turn_id}:{npc.name}",
        )
        with self._scheduler.answering():  # the LLM and voice of this answer come first
            await asyncio.wait([turn.task])  # a barge-in cancels the turn, not this worker
        if self._on_written is not None and not turn.task.cancelled() and turn.trace.reply:
            self._on_written(turn)
        result = await turn.handle.wait()
        trace = turn.trace
        trace.playback_start = turn.handle.playback_started_at
        trace.done = time.monotonic()
        trace.spoken = result.played_text
        trace.interrupted = result.interrupted
        if turn.floor_at and trace.first_audio and turn.floor_at > trace.first_audio:
            trace.floor_wait_ms = round((turn.floor_at - trace.first_audio) * 1000.0, 2)
        self._on_done(turn)

    def _mixer_changed(self) -> None:
        """Any thread: note when a queued handle got the floor (for floor-wait accounting)."""
        holder = self._mixer.current
        if holder is None or holder.state is not HandleState.PLAYING:
            return
        for seat in self._seats:
            turn = seat.current
            if turn is not None and turn.handle is holder and turn.floor_at is None:
                turn.floor_at = time.monotonic()


def _drop(turn: NpcTurn) -> None:
    turn.handle.cancel()
    if turn.speculation is not None:
        turn.speculation.cancel()
