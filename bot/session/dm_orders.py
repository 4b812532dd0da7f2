"""``DmOrders``: what the DM has ordered that every answer obeys, mutes and private directions.

Kept apart from ``DmControls`` (which changes it, and tells the table) so routing and reactions
read the orders without being able to steer: they see it through ``seams.NpcGate``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Direction", "DmOrders"]


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


class DmOrders:
    """Muted NPCs and private directions of one table (an ``NpcGate``)."""

    def __init__(self) -> None:
        self.muted: set[str] = set()
        self.all_muted = False
        self.directions: dict[str, Direction] = {}
        """The DM's private directions per NPC."""
        self._taken: dict[str, Direction] = {}
        """Per NPC, the direction its last turn took (to give back if it was never heard)."""

    def is_muted(self, npc: str) -> bool:
        """``npc`` answers nothing: muted by name, or every NPC is."""
        return self.all_muted or npc in self.muted

    def has_direction(self, npc: str) -> bool:
        """A private direction waits for ``npc``'s next answer."""
        return npc in self.directions

    def take_direction(self, npc: str) -> str | None:
        """The direction for the turn ``npc`` is about to answer; counts one of its turns."""
        direction = self.directions.get(npc)
        if direction is None:
            self._taken.pop(npc, None)
            return None
        self._taken[npc] = direction
        if direction.turns_left is not None:
            direction.turns_left -= 1
            if direction.turns_left <= 0:
                del self.directions[npc]
        return direction.text

    def give_back(self, npc: str) -> None:
        """``npc``'s last turn was dropped before a word of it was heard: its direction gets
        that turn back, unless the DM has given a new one or cleared it since."""
        direction = self._taken.pop(npc, None)
        if direction is None or direction.turns_left is None:
            return  # none taken, or it lasts until cleared and is still there
        current = self.directions.get(npc)
        if current is direction:
            direction.turns_left += 1
        elif current is None and direction.turns_left == 0:  # that turn had used it up
            direction.turns_left = 1
            self.directions[npc] = direction
