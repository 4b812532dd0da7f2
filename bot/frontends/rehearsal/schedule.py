"""When each scene line and DM command actually happens.

Scene times are the plan. With ``wait_for_answers`` a line waits until the table is quiet (no
NPC thinking or speaking, no player transcript pending), and everything after it shifts by the
same delay, so a slow model stretches the scene instead of burying NPCs under new questions.
``interrupt`` lines wait for an NPC to be audible, then talk over it (barge-in). ``overlap``
lines (table talk) start on time whatever happens and never hold up the other lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.audio.speech import FRAME_MS
from bot.frontends.rehearsal.players import LineAudio, SpeakerTimeline
from bot.frontends.rehearsal.scene import DmCommand, Scene

__all__ = ["ScenePlan"]

_FRAMES_PER_S = 1000 // FRAME_MS
_INTERRUPT_GIVE_UP_S = 30.0


def _frame(seconds: float) -> int:
    return round(seconds * _FRAMES_PER_S)


@dataclass(slots=True)
class ScenePlan:
    scene: Scene
    lines: list[LineAudio]
    timelines: dict[str, SpeakerTimeline] = field(init=False)
    started: dict[int, int] = field(default_factory=dict)
    """Index of a line in ``lines`` -> the frame it started at."""
    shift: int = 0
    _pending: list[int] = field(init=False)
    _talk: list[int] = field(init=False)
    """``overlap`` lines not started yet (they never wait behind ``_pending``)."""
    _turns_end: int = 0
    """Frame at which the audio of the lines players take turns with ends."""
    _dm: list[DmCommand] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = sorted(self.lines, key=lambda item: item.line.at)
        self.timelines = {s: SpeakerTimeline(s) for s in self.scene.speakers()}
        indexes = range(len(self.lines))
        self._pending = [i for i in indexes if not self.lines[i].line.overlap]
        self._talk = [i for i in indexes if self.lines[i].line.overlap]
        self._dm = list(self.scene.dm)

    @property
    def all_started(self) -> bool:
        return not self._pending and not self._talk

    @property
    def dm_pending(self) -> bool:
        return bool(self._dm)

    @property
    def audio_end_frame(self) -> int:
        return max((t.end_frame for t in self.timelines.values()), default=0)

    def due_commands(self, k: int, *, quiet: bool = True) -> list[DmCommand]:
        """DM commands due at frame ``k``; a ``say`` also waits for a quiet table."""
        due: list[DmCommand] = []
        while self._dm and _frame(self._dm[0].at) + self.shift <= k:
            cmd = self._dm[0]
            if any(self.lines[i].line.at <= cmd.at for i in self._pending):
                break  # a line planned before this command has not started yet
            if cmd.say is not None and self.scene.wait_for_answers and not quiet:
                break
            if cmd.say is not None and k < self._turns_end:
                break  # the NPC would talk over a player
            due.append(self._dm.pop(0))
        return due

    def advance(self, k: int, *, quiet: bool, npc_audible: bool) -> list[LineAudio]:
        """Start every line that may start at frame ``k``; returns them."""
        started: list[LineAudio] = []
        while self._talk and k >= _frame(self.lines[self._talk[0]].line.at) + self.shift:
            index = self._talk.pop(0)
            self._start(index, k)
            started.append(self.lines[index])
        while self._pending:
            index = self._pending[0]
            item = self.lines[index]
            earliest = _frame(item.line.at) + self.shift
            if k < earliest:
                break
            if k < self._turns_end and not item.line.interrupt:
                break  # players take turns; only interruptions overlap on purpose
            if item.line.interrupt:
                waited_s = (k - earliest) / _FRAMES_PER_S
                if not npc_audible and waited_s < _INTERRUPT_GIVE_UP_S:
                    break
            elif self.scene.wait_for_answers and not quiet:
                break
            self.shift += k - earliest
            self._pending.pop(0)
            self._start(index, k)
            self._turns_end = max(self._turns_end, k + item.frames)
            started.append(item)
        return started

    def _start(self, index: int, k: int) -> None:
        self.timelines[self.lines[index].line.speaker].add(self.lines[index], k)
        self.started[index] = k
