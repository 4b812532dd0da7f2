"""``NpcReloader``: NPC file edits reach a running table, and names reach the recognizer.

The DM edits an NPC's YAML during the evening; the table applies it (hot reload, or ``/reload``
at once) if the file and the NPC's voice are valid, and keeps the last good version otherwise,
telling the DM why (``NpcReloaded``). Whenever NPCs or players' characters change, address
detection and the recognizer's vocabulary learn every name at once.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from bot.audio.speech import Vocabulary
from bot.table.session.events import NpcReloaded
from campaigns.basics import GlyphoxaError
from npcs.campaign import CampaignWatcher
from npcs.campaign.checks import npc_voice_issue

if TYPE_CHECKING:
    from pathlib import Path

    from bot.audio.speech import VoiceRouter
    from bot.table.session.characters import CharacterRoster
    from bot.table.session.seams import EventSink
    from bot.table.session.speakers import SpeakerLanes
    from campaigns.yamlio import Issue, YamlDocument
    from npcs.addressing import AddressDetector
    from npcs.campaign import Campaign
    from npcs.schema import NpcDefinition

__all__ = ["NpcReloader"]

log = logging.getLogger(__name__)


class NpcReloader:
    """Applies NPC edits to one table and keeps the table's names current.

    Args:
        campaign: the campaign whose NPC files are watched (changed in place on reload).
        addressing: address detection, told every NPC and character.
        characters: the players' characters (their names are never heard as NPCs).
        lanes: the speakers' lanes, whose recognizer is biased toward the names.
        voices: the installed voices an edited NPC's voice must be among (None: not checked).
        events: where each reload is shown (the DM's console).
    """

    def __init__(
        self,
        *,
        campaign: Campaign,
        addressing: AddressDetector,
        characters: CharacterRoster,
        lanes: SpeakerLanes,
        voices: VoiceRouter | None,
        events: EventSink,
    ) -> None:
        self._campaign = campaign
        self._addressing = addressing
        self._characters = characters
        self._lanes = lanes
        self._voices = voices
        self._events = events
        self._watcher: CampaignWatcher | None = None

    def open(self) -> None:
        """Remember every NPC file now, so ``apply_edits`` sees later edits even when
        background hot reload is off."""
        self._watcher = CampaignWatcher(self._campaign, checks=self._npc_checks)

    def close(self) -> None:
        """Stop watching (the table ends)."""
        if self._watcher is not None:
            self._watcher.close()

    async def watch(self) -> None:
        """Hot reload: apply each NPC edit as it lands, until cancelled."""
        assert self._watcher is not None, "open() first"
        async for change in self._watcher:
            if change.kind == "invalid":
                log.warning("NPC file %s is invalid; keeping the last good version", change.path)
            else:
                log.info("NPC %s %s", change.name, change.kind)
            self.npcs_changed()
            issues = tuple(str(issue) for issue in change.issues)
            when = time.monotonic()
            self._events.show(NpcReloaded(change.name, change.kind, str(change.path), issues, when))

    async def apply_edits(self) -> list[str]:
        """Apply NPC file edits now (the same path as hot reload); returns change summaries."""
        watcher = self._watcher
        if watcher is None:
            raise GlyphoxaError("the session is not started")
        changes = await watcher.poll_once()
        changes += await watcher.poll_once()  # a change counts once it was stable for one poll
        self.npcs_changed()
        return [f"{c.kind} {c.name or c.path.name}" for c in changes]

    def npcs_changed(self) -> None:
        """NPCs were added, renamed or edited: address them and recognise their names now."""
        self._addressing.set_npcs(self._campaign.npcs)
        self.names_changed()

    def names_changed(self) -> None:
        """NPCs or characters changed: the recognizer and address detection know them all."""
        names = self._characters.names()
        self._addressing.set_characters(names)
        self._lanes.set_vocabulary(Vocabulary.from_campaign(self._campaign, names))

    def _npc_checks(self, npc: NpcDefinition, path: Path, doc: YamlDocument | None) -> list[Issue]:
        """What an edited NPC must pass beyond its file: its voice is installed."""
        inventory = self._voices.inventory if self._voices is not None else None
        issue = npc_voice_issue(npc, path, doc, inventory) if inventory is not None else None
        return [issue] if issue is not None else []
