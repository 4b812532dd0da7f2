"""Short in-character lines an NPC says while its tools run, or instead of an answer it cannot
give (its LLM failed): a line in the NPC's voice is better than a silent NPC."""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["DEFAULT_FALLBACKS", "DEFAULT_FILLERS", "FillerPicker"]

DEFAULT_FILLERS: tuple[str, ...] = (
    "Hmm, let me think.",
    "One moment.",
    "Let me see...",
)

#: What an NPC without ``fallback_lines`` says when it has no clean answer to give.
DEFAULT_FALLBACKS: tuple[str, ...] = (
    "Hm. Ask me that again in a moment.",
    "Give me a moment to think on that.",
    "Now that is a question.",
)


class FillerPicker:
    """Picks one of an NPC's ``filler_lines`` (or the defaults), never the same line twice in a
    row for the same NPC."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._last: dict[str, str] = {}

    def pick(self, npc_name: str, lines: Sequence[str]) -> str:
        choices = list(lines) or list(DEFAULT_FILLERS)
        last = self._last.get(npc_name)
        if len(choices) > 1 and last in choices:
            choices.remove(last)
        line = self._rng.choice(choices)
        self._last[npc_name] = line
        return line
