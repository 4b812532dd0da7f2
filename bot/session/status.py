"""``table_status``: a snapshot of one table for the DM (``/status``, the console's first view).

Read-only: the NPCs (muted, speaking, thinking, queued, overrides, last tier and why,
directions, as "2 turns", never their words), who speaks, and recent voice-to-voice latency.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.session.dm_orders import DmOrders
    from bot.session.npc_queue import NpcQueues
    from bot.session.recorder import TranscriptRecorder
    from bot.session.speakers import SpeakerLanes
    from bot.session.trace import TurnTrace
    from bot.speech import Mixer
    from npcs.campaign import Campaign
    from npcs.tier_selector import TierSelector

__all__ = ["TableView", "table_status"]


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
    def orders(self) -> DmOrders: ...
    @property
    def tiers(self) -> TierSelector: ...
    @property
    def lanes(self) -> SpeakerLanes: ...
    @property
    def traces(self) -> list[TurnTrace]: ...


def table_status(table: TableView) -> dict[str, Any]:
    """The DM's snapshot of ``table`` as plain data (JSON-ready)."""
    campaign, mixer, turns, orders = table.campaign, table.mixer, table.turns, table.orders
    traces = table.traces
    now = time.monotonic()
    holder = mixer.current
    last_turns = {trace.npc: trace for trace in traces if trace.heard}
    npcs = {}
    for name, npc in campaign.npcs.items():
        override = table.tiers.override_for(name, now)
        last = last_turns.get(name)
        direction = orders.directions.get(name)
        npcs[name] = {
            "muted": orders.is_muted(name),
            "speaking": holder is not None and holder.npc == name and mixer.npc_speaking,
            "thinking": turns.current(name) is not None,
            "queued": turns.queued(name),
            "override": override[1] if override else None,
            "engine": npc.engine.value,
            "budget_tier": npc.budget_tier.label,
            "last_tier": last.tier if last else None,
            "last_tier_reason": last.tier_reason if last else None,
            "direction": direction.describe() if direction is not None else None,
            "direction_turns": direction.turns_left or 0 if direction is not None else 0,
        }
    recent = [t.stages_ms()["voice_to_voice"] for t in traces[-20:]]
    return {
        "campaign": campaign.name,
        "session_id": table.recorder.session_id,
        "npcs": npcs,
        "speakers": {
            s.name: {
                "speaking": s.speaking,
                "partial_tier": s.partial_tier,
                "display_name": s.display_name,
            }
            for s in table.lanes
        },
        "turns": len(traces),
        "queue_depth": turns.depth(),
        "recent_voice_to_voice_ms": [ms for ms in recent if ms is not None],
    }
