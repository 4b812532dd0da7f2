"""``NpcSeat``: everything one table knows about one NPC during a session, in one object.

A seat holds what the DM has ordered for the NPC (muted, a mood, a private direction and the
turn of it the last answer took), its turn queue (the queued turns, the worker that plays them,
the turn it is on) and says what the DM sees of it (``status``), what its next answer is told
(``brief``) and what a resumed table must keep (``as_json``/``load``). ``TableSeats`` holds the
seats of one table, one per NPC, made on first use, plus the table-wide "every NPC is muted".

The DM's controls change seats, routing and reactions read them (through ``seams.NpcGate``),
the turn queues run their workers on them, status and the table's snapshot read them typed: a
new per-NPC state is a field here, not a dict in each part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npcs.context import mood_note

if TYPE_CHECKING:
    from bot.table.session.trace import TurnTrace
    from bot.table.session.turns import NpcTurn
    from npcs.schema import NpcDefinition

__all__ = ["Badge", "Direction", "NpcSeat", "NpcStatus", "TableSeats"]


@dataclass(slots=True)
class Direction:
    """A private direction for an NPC's next ``turns_left`` answers, or (None) for every answer
    until the DM clears it (``DmControls.direct``)."""

    text: str
    turns_left: int | None

    def describe(self) -> str:
        """How long it lasts, as the DM reads it: "3 turns", "1 turn", "until cleared"."""
        if self.turns_left is None:
            return "until cleared"
        return f"{self.turns_left} turn{'s' if self.turns_left != 1 else ''}"


@dataclass(frozen=True, slots=True)
class Badge:
    """One thing the DM has ordered for an NPC, as the DM reads it ("muted", "directed, 2 turns
    left"); ``css`` names its look on the console's card."""

    text: str
    css: str = ""


@dataclass(frozen=True, slots=True)
class NpcStatus:
    """What the DM sees of one NPC at the table (``/session status``, the console's cards).

    Never the words of a private direction: only how long it lasts.
    """

    name: str
    muted: bool
    speaking: bool
    thinking: bool
    queued: int
    override: str | None
    """The DM's tier override in force and why ("DM override deep for Bartok, 60s left")."""
    engine: str
    budget_tier: str
    last_tier: str | None
    last_tier_reason: str | None
    direction: str | None
    """How long the private direction lasts ("2 turns", "until cleared"); None: none."""
    direction_turns: int
    mood: str | None = None
    """The mood the DM set ("grumpy", "suspicious of the elves"); None: its own."""
    badges: tuple[Badge, ...] = ()
    """What the DM has ordered for it, in the words ``/session status`` and the console show."""

    def as_json(self) -> dict[str, Any]:
        """Plain data (the DM's JSON snapshot)."""
        data = {name: getattr(self, name) for name in self.__slots__ if name != "name"}
        data["badges"] = [badge.text for badge in self.badges]
        return data


@dataclass(slots=True)
class NpcSeat:
    """One NPC at one table: the DM's orders for it and its turns."""

    name: str
    muted: bool = False
    """Muted by name (``TableSeats.is_muted`` also honours "every NPC is muted")."""
    direction: Direction | None = None
    """The DM's private direction, waiting for the NPC's next answers."""
    taken: Direction | None = None
    """The direction the NPC's last turn took (given back if that turn was never heard)."""
    mood: str | None = None
    """The mood the DM set (``DmControls.set_mood``): every answer is told it until cleared."""
    queue: asyncio.Queue[NpcTurn] = field(default_factory=asyncio.Queue)
    """Turns waiting for the NPC, in the order it was addressed."""
    worker: asyncio.Task[None] | None = None
    """The task playing the NPC's turns one by one (``NpcQueues``)."""
    current: NpcTurn | None = None
    """The turn the NPC is thinking or speaking now."""

    @property
    def busy(self) -> bool:
        """A turn of this NPC runs or waits."""
        return self.current is not None or not self.queue.empty()

    def brief(self, *, take: bool) -> str | None:
        """What the DM asks of the NPC's next answer, for its prompt only (never the scene, a
        transcript or memory): its mood, then its private direction. ``take``: the answer is
        starting, so it counts one of the direction's turns; otherwise this is a look ahead (a
        speculation)."""
        direction = self.direction
        if take:
            self.taken = direction
            if direction is not None and direction.turns_left is not None:
                direction.turns_left -= 1
                if direction.turns_left <= 0:
                    self.direction = None
        parts = [mood_note(self.mood)] if self.mood else []
        if direction is not None:
            parts.append(direction.text)
        return " ".join(parts) or None

    def give_back(self) -> None:
        """The NPC's last turn was dropped before a word of it was heard: its direction gets
        that turn back, unless the DM has given a new one or cleared it since."""
        direction, self.taken = self.taken, None
        if direction is None or direction.turns_left is None:
            return  # none taken, or it lasts until cleared and is still there
        if self.direction is direction:
            direction.turns_left += 1
        elif self.direction is None and direction.turns_left == 0:  # that turn had used it up
            direction.turns_left = 1
            self.direction = direction

    def status(
        self,
        npc: NpcDefinition,
        *,
        muted: bool,
        speaking: bool,
        override: str | None,
        last: TurnTrace | None,
    ) -> NpcStatus:
        """What the DM sees of the NPC now; the table says what the seat cannot know: whether
        every NPC is muted, whether its voice plays, the tier override, its last heard turn."""
        direction = self.direction
        badges = []
        if muted:
            badges.append(Badge("muted", "muted-badge"))
        if override:
            badges.append(Badge(f"tier {override}"))
        if direction is not None:
            left = " left" if direction.turns_left else ""
            badges.append(Badge(f"directed, {direction.describe()}{left}", "direct"))
        if self.mood:
            badges.append(Badge(f"mood: {self.mood}", "mood"))
        return NpcStatus(
            name=self.name,
            muted=muted,
            speaking=speaking,
            thinking=self.current is not None,
            queued=self.queue.qsize(),
            override=override,
            engine=npc.engine.value,
            budget_tier=npc.budget_tier.label,
            last_tier=last.tier if last else None,
            last_tier_reason=last.tier_reason if last else None,
            direction=direction.describe() if direction is not None else None,
            direction_turns=direction.turns_left or 0 if direction is not None else 0,
            mood=self.mood,
            badges=tuple(badges),
        )

    def as_json(self) -> dict[str, Any]:
        """What a resumed table keeps of the seat (JSON-ready; the DM's orders, not turns)."""
        direction = self.direction
        return {
            "muted": self.muted,
            "mood": self.mood,
            "direction": None
            if direction is None
            else {"text": direction.text, "turns": direction.turns_left},
        }

    def load(self, data: dict[str, Any]) -> list[str]:
        """Put back what ``as_json`` kept; returns what could not be (each a short reason)."""
        problems: list[str] = []
        self.muted = bool(data.get("muted", False))
        mood = data.get("mood")
        self.mood = mood if isinstance(mood, str) and mood.strip() else None
        direction = data.get("direction")
        if isinstance(direction, dict):
            text, turns = direction.get("text"), direction.get("turns")
            if isinstance(text, str) and (turns is None or (isinstance(turns, int) and turns > 0)):
                self.direction = Direction(text, turns)
            else:
                problems.append(f"direction for {self.name}: not a direction")
        return problems


class TableSeats:
    """The seats of one table by NPC name (an ``NpcGate``), made on first use."""

    def __init__(self) -> None:
        self._seats: dict[str, NpcSeat] = {}
        self.all_muted = False
        """The DM muted every NPC (``/npc mute all``)."""

    def seat(self, name: str) -> NpcSeat:
        """The seat of the NPC ``name`` (made now if it has none yet)."""
        found = self._seats.get(name)
        if found is None:
            found = self._seats[name] = NpcSeat(name)
        return found

    def get(self, name: str) -> NpcSeat | None:
        """The seat of ``name`` if it has one."""
        return self._seats.get(name)

    def __iter__(self) -> Iterator[NpcSeat]:
        return iter(list(self._seats.values()))

    def names(self) -> list[str]:
        """The NPCs with a seat, in the order they got it."""
        return list(self._seats)

    def is_muted(self, npc: str) -> bool:
        """``npc`` answers nothing: muted by name, or every NPC is."""
        seat = self._seats.get(npc)
        return self.all_muted or (seat is not None and seat.muted)

    def has_direction(self, npc: str) -> bool:
        """A private direction waits for ``npc``'s next answer."""
        seat = self._seats.get(npc)
        return seat is not None and seat.direction is not None

    def brief(self, npc: str, *, take: bool) -> str | None:
        """What the DM asks of ``npc``'s next answer (``NpcSeat.brief``)."""
        return self.seat(npc).brief(take=take)

    def give_back(self, npc: str) -> None:
        """``npc``'s last turn was dropped unheard (``NpcSeat.give_back``)."""
        seat = self._seats.get(npc)
        if seat is not None:
            seat.give_back()
