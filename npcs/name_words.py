"""What counts as a name when players talk: the parts of an NPC's name, and everyday words.

Players shorten names the way people do: "Captain Vessa Thornwood" is "Vessa", "Thornwood" or
"Captain Thornwood"; "Hagar the Boatman" is "Hagar" or "Boatman"; "Lady Elspeth Marrow" is
"Lady Marrow". :func:`name_parts` derives those forms from the name itself (titles and the
words "the", "of", "from" are not names on their own), so a DM does not have to list every
surname as an alias. The address index ranks them below the names and aliases the DM wrote,
and a part two NPCs share names neither.

:func:`is_everyday` guards the approximate matching: Whisper writes a word it heard clearly as
a word of its vocabulary, so an everyday word heard alone ("arrow", "tombs") is that word, not
a misheard name ("Marrow", "Tomas"). The list is ``everyday_words.txt``.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from campaigns.basics import GlyphoxaError

__all__ = ["TITLES", "edit_distance", "everyday_words", "is_everyday", "name_parts"]

log = logging.getLogger(__name__)

#: Words before a name that say who someone is rather than name them.
TITLES = frozenset(
    """abbess abbot admiral archmage aunt auntie baron baroness bishop brother captain capt
    chief commander count countess dame doctor dr duchess duke earl elder father friar general
    granny grandma grandpa high king lady lieutenant lord madam madame magister master mayor
    mister miss mistress mother mr mrs ms old prince princess professor queen reverend saint
    sarge sergeant sir sister st uncle young""".split()
)
#: Words that begin an epithet or an origin: "Hagar the Boatman", "Morwen of the Veil".
_CONNECTORS = frozenset({"the", "of", "from"})
_MIN_PART = 3
_EVERYDAY_PATH = Path(__file__).with_name("everyday_words.txt")
_INFLECTIONS = ("s", "es", "ed", "d", "ing", "ings", "er", "ers")


def name_parts(words: list[str], skip: frozenset[str] = frozenset()) -> list[list[str]]:
    """The shorter forms players use for a name given as normalised words.

    "captain vessa thornwood" -> vessa, thornwood, vessa thornwood, captain vessa, captain
    thornwood; "hagar the boatman" -> hagar, the boatman, boatman. Words in ``skip`` (function words
    such as "you" or "that") and words under three letters are never a part on their own.
    The full name is not among them.
    """
    cut = next((i for i, word in enumerate(words) if i > 0 and word in _CONNECTORS), len(words))
    core, epithet = words[:cut], words[cut:]
    titles: list[str] = []
    while len(core) > 1 and core[0] in TITLES:
        titles.append(core.pop(0))
    parts: list[list[str]] = []
    if len(core) > 1 or titles or epithet:
        for word in core:
            if len(word) >= _MIN_PART and word not in skip and word not in TITLES:
                parts.append([word])
                if titles:
                    parts.append([*titles, word])
        if len(core) > 1 and titles:
            parts.append(list(core))
    if epithet[:1] == ["the"] and len(epithet) > 1:
        parts += [list(epithet), epithet[1:]]
    full = list(words)
    return [part for part in parts if part != full]


@functools.cache
def everyday_words() -> frozenset[str]:
    """The everyday vocabulary (lowercase, four letters or more), read once per process."""
    try:
        text = _EVERYDAY_PATH.read_text(encoding="utf-8")
    except OSError as error:
        raise GlyphoxaError(
            f"cannot read {_EVERYDAY_PATH} ({error.strerror}); reinstall Glyphoxa"
        ) from None
    return frozenset(line for line in text.split("\n") if line and not line.startswith("#"))


def is_everyday(word: str) -> bool:
    """True for an everyday word or a plain inflection of one ("tombs", "arrows", "walked")."""
    vocabulary = everyday_words()
    if word in vocabulary:
        return True
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if stem in vocabulary or stem + "e" in vocabulary:
                return True
    return False


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (a swap of two neighbours costs one), or ``limit + 1``
    as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            cost = 0 if char == other else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                best = min(best, previous2[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]
