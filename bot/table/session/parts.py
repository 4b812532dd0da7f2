"""The two parts most of a table's pieces read (``bot.table.session.builder`` builds them).

``Cast``: the NPCs at the table and the rules for who answers and how (the campaign, address
detection, the tier selector, each NPC's seat). ``Record``: where what happens at the table goes
(the scene the NPCs hear, campaign memory's transcript, the event bus, the numbering of turns).
A piece given one of these reads what it needs of it; neither steers the table. The rest of
what a session is put together from is in ``table_parts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.table.session.bus import SessionEvents, TurnNumbers
    from bot.table.session.recorder import TranscriptRecorder
    from bot.table.session.scene_log import SceneLog
    from bot.table.session.seats import TableSeats
    from npcs.addressing import AddressDetector
    from npcs.campaign import Campaign
    from npcs.tier_selector import TierSelector

__all__ = ["Cast", "Record"]


@dataclass(frozen=True, slots=True)
class Cast:
    """The NPCs at one table and who answers how."""

    campaign: Campaign
    """The NPCs (found by name or alias)."""
    addressing: AddressDetector
    """Whom a line speaks to."""
    tiers: TierSelector
    """How much time an answer may take (and the DM's overrides)."""
    seats: TableSeats
    """Each NPC's seat: the DM's orders for it, its turn queue."""


@dataclass(frozen=True, slots=True)
class Record:
    """Where what happens at one table goes."""

    scene: SceneLog
    """The lines the NPCs hear (players' finals, NPCs' voiced answers)."""
    recorder: TranscriptRecorder
    """The transcript in campaign memory."""
    events: SessionEvents
    """Listeners and live displays (an ``EventSink``)."""
    new_trace: TurnNumbers
    """Numbers each queued turn (a ``TraceMaker``)."""
