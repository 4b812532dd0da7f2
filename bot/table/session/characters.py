"""Who plays whom at one table: the name each player goes by in transcripts, prompts and memory.

A player is named by their character when one is bound to them, else by their display name.
Bindings come from two places: ``characters:`` in ``campaign.yaml`` (the DM's list, by Discord
user id) and ``/iam`` at the table, which overrides the list for that player and is kept in the
campaign memory, so the next session remembers it. Every character name passes the same rule
(:func:`npcs.characters.character_name_problem`): sayable, and no NPC's name or alias.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from campaigns.basics import GlyphoxaError
from npcs.campaign import Campaign
from npcs.characters import character_name_problem
from npcs.name_index import name_key

if TYPE_CHECKING:
    from bot.table.session.speakers import SpeakerLanes
    from npcs.addressing import AddressDetector

__all__ = ["Binding", "CharacterControls", "CharacterRoster"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Binding:
    """One player's character and where the binding comes from."""

    user_id: str
    character: str
    source: Literal["campaign.yaml", "table"]
    bound_by: str | None = None
    """Who bound it at the table (the player themselves, or the DM)."""


class CharacterRoster:
    """The bindings of one table, read from ``campaign.yaml`` and the campaign memory.

    Args:
        campaign: the loaded campaign (its ``characters:`` list).
        memory: the campaign memory store keeping table bindings (None: this table only).
    """

    def __init__(self, campaign: Campaign, memory: Any = None) -> None:
        self._campaign = campaign
        self._memory = memory
        self._table: dict[str, Binding] = {}

    @property
    def persistent(self) -> bool:
        """Table bindings are kept for the next session (the table has campaign memory)."""
        return self._memory is not None

    async def load(self) -> None:
        """Read the bindings made at earlier sessions of this campaign."""
        if self._memory is None:
            return
        stored = await self._memory.character_bindings(self._campaign.name)
        for row in stored:
            problem = character_name_problem(row.character, self._campaign.npcs.values())
            other = self._player_of(row.character, besides=row.user_id)
            if problem is None and other is not None:
                problem = f"{row.character} is played by {other.user_id} ({other.source})"
            if problem is not None:  # the name was taken since: the player binds another
                log.warning("binding of %s not used: %s", row.user_id, problem)
                continue
            self._table[row.user_id] = Binding(row.user_id, row.character, "table", row.bound_by)
        if self._table:
            log.info("characters bound at earlier sessions: %d", len(self._table))

    def binding(self, user_id: str) -> Binding | None:
        """The player's character: bound at the table, else from ``campaign.yaml``."""
        bound = self._table.get(user_id)
        if bound is not None:
            return bound
        listed = self._campaign.meta.characters.get(user_id)
        return Binding(user_id, listed, "campaign.yaml") if listed is not None else None

    def name_for(self, user_id: str, display_name: str) -> str:
        """What the table calls the player: their character, else their display name."""
        bound = self.binding(user_id)
        return bound.character if bound is not None else display_name

    def bindings(self) -> list[Binding]:
        """Every player's current binding, ``campaign.yaml``'s first."""
        ids = [*self._campaign.meta.characters, *self._table]
        found = (self.binding(user_id) for user_id in dict.fromkeys(ids))
        return [bound for bound in found if bound is not None]

    def names(self) -> list[str]:
        """Every character name of the table (what players may call each other)."""
        return [bound.character for bound in self.bindings()]

    async def bind(self, user_id: str, character: str, *, bound_by: str | None = None) -> Binding:
        """Bind ``user_id`` to ``character``; refused (GlyphoxaError) when the name is no
        character's (an NPC's, unsayable) or another player plays it."""
        character = " ".join(character.split())
        problem = character_name_problem(character, self._campaign.npcs.values())
        if problem is not None:
            raise GlyphoxaError(problem[0].upper() + problem[1:] + ".")
        other = self._player_of(character, besides=user_id)
        if other is not None:
            free = (
                "edit characters: in campaign.yaml"
                if other.source == "campaign.yaml"
                else "`/character unbind` that player"
            )
            raise GlyphoxaError(
                f"{other.character} is already played by another player; to free the name, "
                f"the DM can {free}."
            )
        if self._memory is not None:
            await self._memory.bind_character(
                self._campaign.name, user_id, character, bound_by=bound_by
            )
        bound = self._table[user_id] = Binding(user_id, character, "table", bound_by)
        return bound

    async def unbind(self, user_id: str) -> Binding | None:
        """Drop the binding made at the table; returns what the player goes by now (the
        ``campaign.yaml`` entry, or None: their display name). Refused when only
        ``campaign.yaml`` binds them (the DM edits the file)."""
        if user_id not in self._table:
            listed = self._campaign.meta.characters.get(user_id)
            if listed is not None:
                raise GlyphoxaError(
                    f"{listed} is set for this player in campaign.yaml (characters:); change "
                    "it there, or bind another character with `/iam`."
                )
            raise GlyphoxaError("That player has no character bound.")
        if self._memory is not None:
            await self._memory.unbind_character(self._campaign.name, user_id)
        del self._table[user_id]
        return self.binding(user_id)

    def _player_of(self, character: str, *, besides: str) -> Binding | None:
        key = name_key(character)
        return next(
            (
                bound
                for bound in self.bindings()
                if bound.user_id != besides and name_key(bound.character) == key
            ),
            None,
        )


class CharacterControls:
    """Binding characters while the table runs: the player's open lane is renamed at once, and
    address detection and the recognizer's vocabulary learn the name.

    Args:
        roster: the table's bindings.
        lanes: the players' open lanes.
        addressing: keeps a renamed player's conversation with an NPC.
        names_changed: tells address detection and the recognizer every name again.
    """

    def __init__(
        self,
        *,
        roster: CharacterRoster,
        lanes: SpeakerLanes,
        addressing: AddressDetector,
        names_changed: Callable[[], None],
    ) -> None:
        self.characters = roster
        self._lanes = lanes
        self._addressing = addressing
        self._names_changed = names_changed

    async def bind_character(
        self, user_id: str | int, character: str, *, bound_by: str | None = None
    ) -> Binding:
        """``/iam``: the player ``user_id`` plays ``character`` from now on (and at the
        campaign's next sessions); GlyphoxaError says why a name is refused."""
        bound = await self.characters.bind(str(user_id), character, bound_by=bound_by)
        self._rename_speaker(str(user_id))
        self._names_changed()
        log.info("player %s plays %s (bound by %s)", user_id, bound.character, bound_by)
        return bound

    async def unbind_character(self, user_id: str | int) -> Binding | None:
        """Forget the table's binding of ``user_id``; returns what binds them now (their
        ``campaign.yaml`` entry) or None (they go by their display name)."""
        now = await self.characters.unbind(str(user_id))
        self._rename_speaker(str(user_id))
        self._names_changed()
        return now

    def _rename_speaker(self, user_id: str) -> None:
        """The player's open lane takes the name they go by now; their conversation with an
        NPC (continuation) is kept under the new name."""
        speaker = self._lanes.get(user_id)
        if speaker is None:
            return
        name = self.characters.name_for(user_id, speaker.display_name)
        if name != speaker.name:
            self._addressing.rename_speaker(speaker.name, name)
            speaker.name = name
