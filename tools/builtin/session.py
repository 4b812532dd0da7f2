"""The ``session`` server (session manager): ``list_sessions``, ``get_session_summary``,
``search_history`` over the campaign memory store."""

from __future__ import annotations

import logging
from typing import Any

from tools.builtin._common import define_tool, object_schema, standard
from tools.builtin.memory import MemoryAccess
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["create_server"]

log = logging.getLogger(__name__)


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Past sessions and their summaries; all land in STANDARD."""
    access = MemoryAccess(ctx)

    async def list_sessions(limit: int = 20) -> dict[str, Any]:
        rows = await access.call(lambda s: s.list_sessions(limit=limit))
        return {"sessions": rows}

    async def get_session_summary(session_id: str | None = None) -> dict[str, Any]:
        target = session_id or ctx.session_id
        if target is None:

            async def latest(store: Any) -> dict[str, Any]:
                recent = await store.list_sessions(limit=1)
                if not recent:
                    raise ToolError("no sessions recorded yet")
                result: dict[str, Any] = await store.session_summary(recent[0]["id"])
                return result

            latest_summary: dict[str, Any] = await access.call(latest)
            return latest_summary
        summary: dict[str, Any] = await access.call(lambda s: s.session_summary(target))
        return summary

    async def search_history(query: str, limit: int = 10) -> dict[str, Any]:
        rows = await access.call(lambda s: s.search_history(query, limit))
        return {"query": query, "results": rows}

    latency = standard(estimated=700, maximum=1500, read_only=True, idempotent=True)
    return BuiltinServer(
        name="session",
        startup=access.startup,
        shutdown=access.shutdown,
        tools=[
            define_tool(
                "list_sessions",
                "List recorded game sessions, newest first, with titles and dates.",
                object_schema({"limit": {"type": "integer", "minimum": 1, "maximum": 100}}),
                list_sessions,
                latency,
            ),
            define_tool(
                "get_session_summary",
                "Summary of one session by id (default: the current or latest session).",
                object_schema({"session_id": {"type": "string", "minLength": 1, "maxLength": 64}}),
                get_session_summary,
                latency,
            ),
            define_tool(
                "search_history",
                "Search the summaries of past sessions (the campaign's long-term history).",
                object_schema(
                    {
                        "query": {"type": "string", "minLength": 1, "maxLength": 300},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                    },
                    ["query"],
                ),
                search_history,
                latency,
            ),
        ],
    )
