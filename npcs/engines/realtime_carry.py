"""What a realtime NPC's conversation carries from one provider session to the next.

Realtime providers end a session after a fixed time (OpenAI: 30 minutes). The engine renews the
session before that, and the new session must know what was said: a summary of the older
conversation and the most recent turns word for word. ``Conversation`` is the engine's own
record of an NPC's turns (independent of any session, so it survives a session the server
closed without warning); ``RenewalPolicy`` says when to renew and how much to carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npcs.engines import realtime_wire as wire

__all__ = ["CarriedTurn", "Conversation", "RenewalPolicy"]

_DIGEST_CHARS = 6000
"""At most this much of the older turns goes into a summary built from the record."""


@dataclass(frozen=True, slots=True)
class RenewalPolicy:
    """When a realtime session is renewed, and what the new one is told.

    Attributes:
        limit_s: the provider's maximum session length (OpenAI: 1800 s).
        margin_s: renew this long before the limit, so a turn in progress can finish first.
        carry_turns: the most recent turns carried word for word (older ones as a summary).
        summary_timeout_s: how long the old session may take to summarize the conversation
            before the summary is built from the engine's own record instead.
    """

    limit_s: float = 1800.0
    margin_s: float = 120.0
    carry_turns: int = 8
    summary_timeout_s: float = 20.0

    def __post_init__(self) -> None:
        if self.limit_s <= 0 or self.margin_s < 0 or self.margin_s >= self.limit_s:
            raise ValueError(
                f"realtime session renewal needs 0 <= margin ({self.margin_s} s) < limit "
                f"({self.limit_s} s)"
            )
        if self.carry_turns < 0:
            raise ValueError(f"carry_turns must be 0 or more, not {self.carry_turns}")

    @property
    def renew_after_s(self) -> float:
        """Seconds after a session opened when it is renewed."""
        return self.limit_s - self.margin_s


@dataclass(frozen=True, slots=True)
class CarriedTurn:
    """One exchange as the NPC experienced it: what happened at the table around it (if
    anything was new), what the player said, and what the NPC answered (as far as heard)."""

    context: str | None
    said: str
    answer: str

    def items(self) -> list[dict[str, Any]]:
        """The turn as Realtime conversation items."""
        items = [wire.message("system", self.context)] if self.context else []
        items.append(wire.message("user", self.said))
        if self.answer:
            items.append(wire.assistant_message(self.answer))
        return items

    def line(self) -> str:
        """The turn as plain lines, for a summary built from the record."""
        return f"{self.said}\nYou answered: {self.answer or '(nothing)'}"


@dataclass
class Conversation:
    """An NPC's realtime conversation as the engine recorded it.

    ``summary`` covers everything before ``turns``; ``fresh`` counts the turns taken since the
    last renewal (none: the old summary still holds and the old session need not be asked).
    """

    summary: str = ""
    turns: list[CarriedTurn] = field(default_factory=list)
    fresh: int = 0
    scene_sent_at: float = float("-inf")
    """The newest table line any session of this NPC was told, so none is told twice."""

    def record(self, turn: CarriedTurn) -> None:
        """Note a finished (or cut) turn."""
        self.turns.append(turn)
        self.fresh += 1

    def fold(self, summary: str | None, keep: int) -> bool:
        """Prepare the carry-over: ``summary`` (from the old session) replaces the old one, or,
        when there is none, the turns that will no longer be carried word for word are added
        to the old summary as lines. Keeps the ``keep`` most recent turns.

        Returns:
            True when the summary came from the record rather than from the model.
        """
        older = self.turns[: max(0, len(self.turns) - keep)]
        self.turns = self.turns[len(older) :]
        self.fresh = 0
        if summary is not None:
            self.summary = summary.strip()
            return False
        if older:
            lines = "\n".join(turn.line() for turn in older)
            joined = f"{self.summary}\n{lines}".strip()
            self.summary = joined[-_DIGEST_CHARS:]
        return True

    def items(self) -> list[dict[str, Any]]:
        """What a new session is told first: the summary, then the recent turns."""
        items: list[dict[str, Any]] = []
        if self.summary:
            items.append(
                wire.message(
                    "system",
                    "This conversation continues from an earlier session. What was said "
                    f"before, in short:\n{self.summary}",
                )
            )
        for turn in self.turns:
            items.extend(turn.items())
        return items
