"""What a table must keep across a restart: the scene, the DM's orders for each NPC (its seat:
mute, private direction) and the tier overrides.

``capture(session)`` takes a :class:`TableState` (JSON-ready, times as wall-clock seconds so
another process, on another machine, can use them); ``restore(session, state)`` puts it into a
freshly started session before anyone speaks. The memory session id travels with it so the
transcript continues where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from campaigns.basics import Tier
from npcs.context import SceneLine

if TYPE_CHECKING:
    from bot.table.session.session import TableSession

__all__ = ["TableState", "capture", "restore"]


@dataclass(frozen=True, slots=True)
class TableState:
    """A running table's conversation state (``scene`` oldest first)."""

    scene: list[dict[str, Any]] = field(default_factory=list)
    """``{"speaker", "text", "npc", "at"}`` with ``at`` in ``time.time()`` seconds."""
    seats: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per NPC, what its seat keeps (``NpcSeat.as_json``: the DM's orders for it)."""
    all_muted: bool = False
    overrides: list[dict[str, Any]] = field(default_factory=list)
    """``{"npc": name or None (all NPCs), "tier": label, "until": wall seconds or None}``."""
    memory_session_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "scene": self.scene,
            "seats": self.seats,
            "all_muted": self.all_muted,
            "overrides": self.overrides,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], memory_session_id: str | None) -> TableState:
        """Tolerant of missing keys (an older row), strict about types it uses."""
        raw = data.get("seats")
        seats = {
            str(name): dict(seat)
            for name, seat in (raw.items() if isinstance(raw, dict) else ())
            if isinstance(seat, dict)
        }
        for name in data.get("muted", []):  # a row from before seats: mutes and directions
            seats.setdefault(str(name), {})["muted"] = True
        for old in data.get("directions", []):
            if isinstance(old, dict) and "npc" in old:
                kept = {"text": old.get("text"), "turns": old.get("turns")}
                seats.setdefault(str(old["npc"]), {})["direction"] = kept
        return cls(
            scene=[dict(line) for line in data.get("scene", []) if isinstance(line, dict)],
            seats=seats,
            all_muted=bool(data.get("all_muted", False)),
            overrides=[dict(o) for o in data.get("overrides", []) if isinstance(o, dict)],
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
        seats={seat.name: seat.as_json() for seat in session.seats},
        all_muted=session.seats.all_muted,
        overrides=overrides,
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
    session.seats.all_muted = state.all_muted
    for name, kept in state.seats.items():
        if name in known:
            problems += session.seats.seat(name).load(kept)
        elif any(kept.values()):  # it had orders that are lost with it
            problems.append(f"NPC {name} no longer exists (its mute or direction is dropped)")
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
    return problems
