"""How an engine learns that its LLM cannot answer right now, and why, in one line.

A supervised server (:class:`npcs.inference.server.LocalLlmServer`) knows when its process has died
and what the fix is; an engine asks it before each request, so a turn fails at once with that line
instead of waiting for a connection error, and after a connection error it asks again so the
player-facing failure names the crash rather than "Connection error".
"""

from __future__ import annotations

from typing import Protocol

from campaigns.basics import GlyphoxaError

__all__ = ["LlmHealth", "LlmUnavailable"]


class LlmHealth(Protocol):
    """Something that knows whether the LLM endpoint is up."""

    def unavailable(self) -> str | None:
        """None when requests may be sent; else the reason and its fix, in one line."""

    async def explain(self, timeout_s: float = 1.0) -> str | None:
        """After a failed request: the reason if the endpoint is down (None: it is up)."""


class LlmUnavailable(GlyphoxaError):
    """The LLM cannot answer now; the message is the one-line reason with its fix."""
