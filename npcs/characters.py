"""What a player's character name must be: sayable, short, and no NPC's name.

One rule for every place a character is named: ``characters:`` in ``campaign.yaml`` (checked by
``glyphoxa check`` at its line) and ``/iam`` at the table. A character called like an NPC
("Bartok", or an alias such as "the sage") would make the table unable to tell whether a player
speaks to the NPC or to a fellow player, so it is refused, with the NPC named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from npcs.name_index import name_forms, name_key
from npcs.schema import NpcDefinition

__all__ = ["MAX_CHARACTER_NAME", "character_name_problem", "discord_id_problem"]

#: Longest character name: a name, not a sentence (Discord's nicknames stop at 32).
MAX_CHARACTER_NAME = 64
_DISCORD_ID = re.compile(r"^\d{17,20}$")


def character_name_problem(name: str, npcs: Iterable[NpcDefinition]) -> str | None:
    """Why ``name`` cannot be a player's character here, or None when it can."""
    stripped = name.strip()
    if not name_key(stripped):
        return f"character name '{name}' has no letters or digits; nobody could say it"
    if len(stripped) > MAX_CHARACTER_NAME:
        return f"character name '{stripped[:20]}...' is longer than {MAX_CHARACTER_NAME} characters"
    forms = set(name_forms(stripped))
    for npc in npcs:
        for called in npc.names():
            if forms & set(name_forms(called)):
                what = "name" if called == npc.name else f"alias '{called}'"
                return (
                    f"character name '{stripped}' is the NPC {npc.name}'s {what}; players could "
                    "not tell them apart (give the character another name)"
                )
    return None


def discord_id_problem(user_id: str) -> str | None:
    """Why ``user_id`` is not a Discord user id, or None when it looks like one."""
    if _DISCORD_ID.match(user_id):
        return None
    return (
        f"'{user_id}' is not a Discord user id (17 to 20 digits: turn on Developer Mode in "
        "Discord's settings, then right-click the player > Copy User ID)"
    )
