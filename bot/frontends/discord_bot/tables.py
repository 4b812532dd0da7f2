"""The production :data:`~bot.frontends.discord_bot.runtime.RuntimeFactory`: ``open_table`` per
session.

``open_table`` is an async context manager (tool servers, LLM server, memory). Async exit stacks
must be left by the task that entered them, so each table lives in one owned task that enters
the context, hands the session over and waits for the stop signal.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.frontends.discord_bot.runtime import RuntimeFactory, TableParts
from bot.settings.config import GlyphoxaConfig
from npcs.inference.pools import InferencePool

__all__ = ["configured_tables"]

log = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 30.0


def configured_tables(
    config: GlyphoxaConfig,
    default_campaign: str | None = None,
    inference: InferencePool | None = None,
) -> RuntimeFactory:
    """A factory opening tables as ``glyphoxa.yaml`` describes (providers, tools, memory);
    ``inference``: the process's connection pools to remote model servers, shared by tables."""

    async def open_configured_table(
        campaign: str | None, *, memory_session_id: str | None = None
    ) -> TableParts:
        from bot.table.assembly.table import open_table

        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        stop = asyncio.Event()

        async def own_table() -> None:
            try:
                async with open_table(
                    config,
                    campaign=campaign or default_campaign,
                    memory_session_id=memory_session_id,
                    inference=inference,
                    serve_metrics=False,  # glyphoxa run serves /metrics once for the process
                ) as session:
                    ready.set_result(session)
                    await stop.wait()
            except BaseException as error:
                if not ready.done():
                    ready.set_exception(error)
                    return
                raise

        task = loop.create_task(own_table(), name="table")
        session = await ready

        async def close() -> None:
            stop.set()
            try:
                await asyncio.wait_for(task, timeout=_STOP_TIMEOUT_S)
            except Exception:
                log.exception("closing the table failed")

        return TableParts(
            session=session,
            tools=getattr(session, "tools", None),
            memory=getattr(session, "memory", None),
            closers=[close],
        )

    return open_configured_table
