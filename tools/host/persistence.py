"""Persist the host's invocation log and calibration in the campaign memory store.

The store (``campaigns.memory.MemoryStore``) is duck-typed here: anything with
``log_tool_call``, ``save_calibration`` and ``load_calibration`` works. The JSON file at
``calibration_path`` stays the default; the store is for deployments that keep state in SQL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tools.host.host import ToolHost
from tools.host.types import Invocation

__all__ = ["load_calibration_from_store", "save_calibration_to_store", "store_invocation_logger"]


def store_invocation_logger(
    store: Any, *, session_id: str | Callable[[], str | None] | None = None
) -> Callable[[Invocation], Awaitable[None]]:
    """An ``on_invocation`` callback writing each call to the store's tool-call log.

    ``session_id`` may be a callable so the log follows the running session as it changes.
    """

    async def log_call(invocation: Invocation) -> None:
        current = session_id() if callable(session_id) else session_id
        await store.log_tool_call(
            npc=invocation.npc,
            tool=invocation.tool,
            tier=invocation.tier.label,
            status=invocation.status,
            duration_ms=invocation.duration_ms,
            session_id=current,
            approval=invocation.approval,
        )

    return log_call


async def save_calibration_to_store(host: ToolHost, store: Any) -> int:
    """Write every tool's window for the host's environment; returns how many tools."""
    snapshot = host.calibration.snapshot()
    for tool, samples in snapshot.items():
        await store.save_calibration(host.calibration.environment, tool, samples)
    return len(snapshot)


async def load_calibration_from_store(host: ToolHost, store: Any) -> int:
    """Adopt the store's windows for the host's environment (tiers follow at once)."""
    data = await store.load_calibration(host.calibration.environment)
    host.restore_calibration(data)
    return len(data)
