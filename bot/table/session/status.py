"""``table_status``: a snapshot of one table for the DM (``/session status``, the console's cards).

Read-only and typed: each NPC's ``NpcStatus`` comes from its seat (``bot.table.session.seats``:
muted, thinking, queued, directions as "2 turns", never their words), told what only the table knows
(whether its voice plays, the tier override, its last tier and why); then who speaks, and recent
voice-to-voice latency. ``as_json`` gives it as plain data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from bot.table.session.seats import NpcStatus

if TYPE_CHECKING:
    from bot.audio.speech import Mixer
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.recorder import TranscriptRecorder
    from bot.table.session.seats import TableSeats
    from bot.table.session.speakers import SpeakerLanes
    from bot.table.session.trace import TurnTrace
    from npcs.campaign import Campaign
    from npcs.tier_selector import TierSelector

__all__ = ["SpeakerStatus", "TableStatus", "TableView", "table_status"]


class TableView(Protocol):
    """What the DM's snapshot reads of a table (``TableSession``)."""

    @property
    def campaign(self) -> Campaign: ...
    @property
    def recorder(self) -> TranscriptRecorder: ...
    @property
    def mixer(self) -> Mixer: ...
    @property
    def turns(self) -> NpcQueues: ...
    @property
    def seats(self) -> TableSeats: ...
    @property
    def tiers(self) -> TierSelector: ...
    @property
    def lanes(self) -> SpeakerLanes: ...
    @property
    def traces(self) -> list[TurnTrace]: ...


@dataclass(frozen=True, slots=True)
class SpeakerStatus:
    """One player (or the DM) whose voice the table hears."""

    speaking: bool
    partial_tier: str | None
    """The tier their words so far would get."""
    display_name: str


@dataclass(frozen=True, slots=True)
class TableStatus:
    """The DM's snapshot of one table."""

    campaign: str
    session_id: str | None
    npcs: dict[str, NpcStatus]
    speakers: dict[str, SpeakerStatus]
    """By the name the table knows them by (their character, when bound)."""
    turns: int
    queue_depth: int
    recent_voice_to_voice_ms: list[float]
    """Of the last 20 turns, those that were voiced."""

    def as_json(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""
        return {
            "campaign": self.campaign,
            "session_id": self.session_id,
            "npcs": {name: npc.as_json() for name, npc in self.npcs.items()},
            "speakers": {
                name: {
                    "speaking": s.speaking,
                    "partial_tier": s.partial_tier,
                    "display_name": s.display_name,
                }
                for name, s in self.speakers.items()
            },
            "turns": self.turns,
            "queue_depth": self.queue_depth,
            "recent_voice_to_voice_ms": self.recent_voice_to_voice_ms,
        }


def table_status(table: TableView) -> TableStatus:
    """The DM's snapshot of ``table`` now."""
    campaign, mixer, seats, traces = table.campaign, table.mixer, table.seats, table.traces
    now = time.monotonic()
    holder = mixer.current
    last_turns = {trace.npc: trace for trace in traces if trace.heard}
    npcs = {}
    for name, npc in campaign.npcs.items():
        override = table.tiers.override_for(name, now)
        npcs[name] = seats.seat(name).status(
            npc,
            muted=seats.is_muted(name),
            speaking=holder is not None and holder.npc == name and mixer.npc_speaking,
            override=override[1] if override else None,
            last=last_turns.get(name),
        )
    recent = [t.stages_ms()["voice_to_voice"] for t in traces[-20:]]
    return TableStatus(
        campaign=campaign.name,
        session_id=table.recorder.session_id,
        npcs=npcs,
        speakers={
            s.name: SpeakerStatus(s.speaking, s.partial_tier, s.display_name) for s in table.lanes
        },
        turns=len(traces),
        queue_depth=table.turns.depth(),
        recent_voice_to_voice_ms=[ms for ms in recent if ms is not None],
    )
