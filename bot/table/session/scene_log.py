"""``SceneLog``: the lines of the scene the NPCs' prompts begin with.

The last ``MAX_SCENE`` lines said at the table (players' finals, NPCs' voiced answers), each
numbered in the order said, and the window prompts show of them: it is put while the scene
grows, so a local LLM keeps the prompt's prefix cached (``npcs.context.SceneWindow``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from npcs.context import SceneLine, SceneWindow

__all__ = ["MAX_SCENE", "SceneLog"]

MAX_SCENE = 40
"""Lines kept; older ones live in campaign memory only."""


class SceneLog:
    """The table's recent lines and the window prompts show of them."""

    def __init__(self) -> None:
        self.lines: list[SceneLine] = []
        self.window = SceneWindow()
        self._seq = 0

    def add(self, line: SceneLine) -> None:
        """``line`` was said: number it, keep the last ``MAX_SCENE``, move the window."""
        self.lines.append(dataclasses.replace(line, seq=self._seq))
        self._seq += 1
        del self.lines[:-MAX_SCENE]
        self.window.advance(self.lines)

    def with_next(self, line: SceneLine) -> list[SceneLine]:
        """The scene as it will be once ``line`` is said (numbered as the next line)."""
        return [*self.lines, dataclasses.replace(line, seq=self._seq)][-MAX_SCENE:]

    def shown(self, lines: Sequence[SceneLine] | None = None) -> list[SceneLine]:
        """What a prompt shows of the scene (or of ``lines``, a scene to be)."""
        return self.window.shown(self.lines if lines is None else lines)

    def heard_by(self, speaker: str, began: float | None) -> list[SceneLine]:
        """The scene as ``speaker`` had heard it when their current line ``began``: other
        players' lines that came while they talked are left out (the next turn has them).
        Their prompt is evaluated while they talk; at a full table, a line of table talk
        landing meanwhile moved everything after it, and the turn evaluated those tokens
        again."""
        if began is None:
            return self.shown()
        return self.shown(
            [
                line
                for line in self.lines
                if line.npc is not None or line.speaker == speaker or line.at <= began
            ]
        )
