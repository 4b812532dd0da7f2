"""Errors that are the user's to fix, shown without a traceback.

Lives in the lowest package so every layer (campaigns <- tools <- npcs <- bot) can raise it.
"""

from __future__ import annotations

__all__ = ["GlyphoxaError"]


class GlyphoxaError(Exception):
    """An expected failure: bad input, missing file, unreachable service.

    The CLI and the Discord front end print ``str(error)`` and nothing else, so the message must
    say what went wrong and, where possible, where (``file:line``) and how to fix it.
    """
