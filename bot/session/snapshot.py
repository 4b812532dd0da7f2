"""What a table must keep across a restart: the scene, the DM's mutes and tier overrides.

``capture(session)`` takes a :class:`TableState` (JSON-ready, times as wall-clock seconds so
another process, on another machine, can use them); ``restore(session, state)`` puts it into a
freshly started session before anyone speaks. The memory session id travels with it so the
transcript continues where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.session.dm_orders import Direction
from campaigns.basics import Tier
from npcs.context import SceneLine

if TYPE_CHECKING:
    from bot.session.session import TableSession

__all__ = ["TableState", "capture", "restore"]


@dataclass(frozen=True, slots=True)
class TableState:
    """A running table's conversation state (``scene`` oldest first)."""

    scene: list[dict[str, Any]] = field(default_factory=list)
    """``{"speaker", "text", "npc", "at"}`` with ``at`` in ``time.time()`` seconds."""
    muted: list[str] = field(default_factory=list)
    all_muted: bool = False
    overrides: list[dict[str, Any]] = field(default_factory=list)
    """``{"npc": name or None (all NPCs), "tier": label, "until": wall seconds or None}``."""
    directions: list[dict[str, Any]] = field(default_factory=list)
    """The DM's private directions: ``{"npc", "text", "turns"}`` (turns still to come; None:
    until cleared)."""
    memory_session_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "scene": self.scene,
            "muted": self.muted,
            "all_muted": self.all_muted,
            "overrides": self.overrides,
            "directions": self.directions,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], memory_session_id: str | None) -> TableState:
        """Tolerant of missing keys (an older row), strict about types it uses."""
        return cls(
            scene=[dict(line) for line in data.get("scene", []) if isinstance(line, dict)],
            muted=[str(name) for name in data.get("muted", [])],
            all_muted=bool(data.get("all_muted", False)),
            overrides=[dict(o) for o in data.get("overrides", []) if isinstance(o, dict)],
            directions=[dict(d) for d in data.get("directions", []) if isinstance(d, dict)],
            memory_session_id=memory_session_id,
        )


def capture(session: TableSession) -> TableState:
    """The state of ``session`` now (cheap: called after events, on the event loop)."""
    wall, mono = time.time(), time.monotonic()
    scene = [
        {"speaker": line.speaker, "text": line.text, "npc": line.npc, "at": wall - (mono - line.at)}
        for line in session.scene
    ]
    overrides = [
        {"npc": npc, "tier": tier.label, "until": None if left is None else wall + left}
        for npc, tier, left in session.tiers.active_overrides(mono)
    ]
    return TableState(
        scene=scene,
        muted=sorted(session.orders.muted),
        all_muted=session.orders.all_muted,
        overrides=overrides,
        directions=[
            {"npc": npc, "text": direction.text, "turns": direction.turns_left}
            for npc, direction in session.orders.directions.items()
        ],
        memory_session_id=session.recorder.session_id,
    )


def restore(session: TableSession, state: TableState) -> list[str]:
    """Put ``state`` into a started ``session``; returns what could not be restored (an NPC
    that no longer exists, an unknown tier), each as a short reason."""
    wall, mono = time.time(), time.monotonic()
    problems: list[str] = []
    for line in state.scene:
        at = mono - max(0.0, wall - float(line.get("at", wall)))
        npc = line.get("npc")
        speaker, said = line.get("speaker"), line.get("text")
        if speaker is None or said is None:
            continue
        session.scene_log.add(SceneLine(str(speaker), str(said), npc, at))
    known = set(session.campaign.npcs)
    session.orders.all_muted = state.all_muted
    for name in state.muted:
        if name in known:
            session.orders.muted.add(name)
        else:
            problems.append(f"muted NPC {name} no longer exists")
    for override in state.overrides:
        npc = override.get("npc")
        until = override.get("until")
        left = None if until is None else float(until) - wall
        if left is not None and left <= 0:
            continue
        if npc is not None and npc not in known:
            problems.append(f"tier override for {npc}: no such NPC any more")
            continue
        try:
            tier = Tier.parse(str(override.get("tier")))
        except ValueError:
            problems.append(f"tier override {override.get('tier')!r} is not a tier")
            continue
        session.tiers.set_override(tier, npc=npc, duration_s=left, now=mono)
    for direction in state.directions:
        npc, text, turns = direction.get("npc"), direction.get("text"), direction.get("turns")
        if npc not in known:
            problems.append(f"direction for {npc}: no such NPC any more")
        elif isinstance(text, str) and (turns is None or (isinstance(turns, int) and turns > 0)):
            session.orders.directions[str(npc)] = Direction(text, turns)
    return problems
