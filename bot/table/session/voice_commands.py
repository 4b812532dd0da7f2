"""DM voice commands at the table: the DM's final transcript -> the same controls as ``/tier``,
``/npc mute``, ``/direct`` and a barge-in on every NPC, acknowledged with a chime or a one-word
reply. A private direction ("Bartok, between us: ...") is never transcribed: the session keeps
its words out of the transcripts, the scene and memory (``private_words``).

A part of ``TableSession``, applying commands through its ``DmControls``. Who the DM is comes
from the table: names in ``dm_speakers`` (rehearsal, tests) or ``dm_resolver(speaker_id)``
(Discord: the DM role), never from what is said, so a player's identical words stay an ordinary
turn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from bot.audio.speech import SAMPLE_RATE
from campaigns.basics import GlyphoxaError
from npcs.dm_voice import DmCommandParser, DmVoiceCommand

if TYPE_CHECKING:
    from bot.audio.speech import Mixer
    from bot.settings.config import GlyphoxaConfig
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.seams import Steering, TraceMaker
    from bot.table.session.speakers import Speaker
    from npcs.addressing import NameMention
    from npcs.campaign import Campaign

__all__ = ["VoiceCommands", "ack_tone"]

log = logging.getLogger(__name__)

#: After "<NPC>, between us." alone, the DM's next words within this many seconds are the
#: direction.
PRIVATE_PAUSE_S = 10.0


def ack_tone(volume: float = 0.18) -> np.ndarray:
    """A soft two-note chime (~0.2 s, mono int16 at 48 kHz): "heard you" without words."""
    notes = []
    for freq, seconds in ((880.0, 0.08), (1318.5, 0.12)):
        t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
        fade = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.01)  # 10 ms ramps: no clicks
        notes.append(np.sin(2 * np.pi * freq * t) * fade)
    return (np.concatenate(notes) * volume * 32767).astype(np.int16)


class VoiceCommands:
    """The DM's voice at one table (a ``seams.DmVoice``).

    Args:
        config: ``dm_voice`` (on, acknowledgement, override minutes) is read at each command,
            so a reloaded config applies.
        campaign: the NPCs a command names.
        mixer: plays the acknowledgement chime.
        turns: queues the one-word acknowledgement in the NPC's voice.
        controls: the DM controls a command applies.
        new_trace: numbers the acknowledgement's turn.
        mentions: finds NPC names in words (the table's address detection).
        dm_speakers: speaker or display names that are the DM (rehearsal, tests).
    """

    def __init__(
        self,
        *,
        config: GlyphoxaConfig,
        campaign: Campaign,
        mixer: Mixer,
        turns: NpcQueues,
        controls: Steering,
        new_trace: TraceMaker,
        mentions: Callable[[str], Sequence[NameMention]],
        dm_speakers: Iterable[str] = (),
    ) -> None:
        self._config = config
        self._campaign = campaign
        self._mixer = mixer
        self._turns = turns
        self._controls = controls
        self._new_trace = new_trace
        self.dm_speakers = set(dm_speakers)
        self.dm_resolver: Callable[[str], bool] | None = None
        """Speaker id -> is the DM (Discord: has the DM role); None: only ``dm_speakers``."""
        self.parser = DmCommandParser(mentions)
        self._private_next: dict[str, tuple[str, float]] = {}
        """DM speaker -> (NPC, until when) whose next words are a private direction."""

    def is_dm(self, speaker: Speaker) -> bool:
        """Whether this voice lane is the DM's (by configured name or the table's resolver)."""
        if speaker.name in self.dm_speakers or speaker.display_name in self.dm_speakers:
            return True
        return self.dm_resolver is not None and self.dm_resolver(speaker.id)

    def private_words(self, speaker: Speaker, text: str) -> bool:
        """Whether the DM's ``text`` (a partial or a final) is, or begins, a private direction:
        shown nowhere, recorded nowhere."""
        if not self._config.dm_voice.enabled or not text or not self.is_dm(speaker):
            return False
        pending = self._private_next.get(speaker.name)
        if pending is not None and time.monotonic() <= pending[1]:
            return True
        return self.parser.parse_private(text) is not None

    def apply(self, speaker: Speaker, text: str) -> DmVoiceCommand | None:
        """Apply ``text`` if it is a DM voice command from the DM's lane; None otherwise."""
        if not self._config.dm_voice.enabled or not self.is_dm(speaker):
            return None
        pending = self._private_next.pop(speaker.name, None)
        if pending is not None and time.monotonic() <= pending[1]:
            command: DmVoiceCommand | None = DmVoiceCommand(
                "direct", pending[0], None, text.strip(), text.strip()
            )
        else:
            command = self.parser.parse(text)
        if command is None:
            return None
        heard = f"{speaker.name}: {command.heard}"
        try:
            if command.action == "direct" and command.npc and command.direction is None:
                until = time.monotonic() + PRIVATE_PAUSE_S  # "Bartok, between us." then a pause
                self._private_next[speaker.name] = (command.npc, until)
            else:
                minutes = self._config.dm_voice.override_minutes
                self._controls.obey(command, heard=heard, override_minutes=minutes)
        except GlyphoxaError as error:  # e.g. the NPC was removed by a hot reload just now
            log.warning("DM voice command (%s) not applied: %s", command.describe(), error)
            return None
        log.info("DM voice command from %s: %s", speaker.name, command.describe())
        self._acknowledge(command)
        return command

    def _acknowledge(self, command: DmVoiceCommand) -> None:
        cfg = self._config.dm_voice
        if cfg.ack == "none":
            return
        npc = self._campaign.npcs.get(command.npc) if command.npc else None
        if command.action == "direct" and command.direction is None:
            return  # the DM goes on talking: the chime comes after the direction
        if cfg.ack == "word" and npc is not None and command.action not in ("stop", "direct"):
            trace = self._new_trace(npc.name, "DM", "", npc.budget_tier, "DM voice command")
            trace.address_reason = "DM voice command acknowledgement"
            self._turns.enqueue(npc.name, "DM", "", npc.budget_tier, trace, verbatim=cfg.ack_word)
            return
        self._mixer.play_cue(ack_tone())
