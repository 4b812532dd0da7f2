"""Who is calling a tool: the NPC (and the session) a call is made for.

A tool that records something on an NPC's behalf (``propose_memory`` files a proposal under the
proposing NPC's name) must learn the caller from the host, never from the model's arguments: a
model could claim to be anyone. The tool host sets the caller for the duration of a call; a
built-in called in-process reads it with :func:`current_caller`, and an MCP server receives it
in the request's ``_meta`` under :data:`CALLER_META_KEY` (``tools.builtin.serve`` sets it again
for the handler). Third-party servers receive the same ``_meta`` and may ignore it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["CALLER_META_KEY", "ToolCaller", "calling_as", "current_caller"]

#: ``_meta`` key of a ``tools/call`` request naming the NPC and session it is made for.
CALLER_META_KEY = "io.glyphoxa/caller"

_MAX_FIELD = 200


@dataclass(frozen=True, slots=True)
class ToolCaller:
    """The NPC a tool call is made for, and the campaign-memory session it happens in."""

    npc: str
    session_id: str | None = None

    def to_meta(self) -> dict[str, Any]:
        """The request ``_meta`` entry sent to an MCP server."""
        body: dict[str, Any] = {"npc": self.npc}
        if self.session_id:
            body["session_id"] = self.session_id
        return {CALLER_META_KEY: body}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> ToolCaller | None:
        """The caller a request's ``_meta`` names; None when it names none (or malformed)."""
        body = (meta or {}).get(CALLER_META_KEY)
        if not isinstance(body, Mapping):
            return None
        npc = body.get("npc")
        session_id = body.get("session_id")
        if not isinstance(npc, str) or not npc.strip() or len(npc) > _MAX_FIELD:
            return None
        if not isinstance(session_id, str) or not session_id or len(session_id) > _MAX_FIELD:
            session_id = None
        return cls(npc.strip(), session_id)


_current: ContextVar[ToolCaller | None] = ContextVar("glyphoxa_tool_caller", default=None)


def current_caller() -> ToolCaller | None:
    """The caller of the tool call running in this task, if the host named one."""
    return _current.get()


@contextlib.contextmanager
def calling_as(caller: ToolCaller | None) -> Iterator[None]:
    """Run the block as a call made for ``caller`` (None: for nobody in particular)."""
    token = _current.set(caller)
    try:
        yield
    finally:
        _current.reset(token)
