"""The console's pulse: what every DM page shows, whichever page it is.

A DM editing an NPC must not miss a tool approval that waits 45 seconds, so every DM page
keeps one Server-Sent Events stream, ``/pulse``, besides the live table's own: the approvals
of every table (a dock with a countdown, and how each ended), the counts in the navigation
(approvals waiting, facts to review), the tables running (so a page waiting for the table
moves to it when it starts) and notices (an NPC reloaded). Each event replaces a whole block,
so a page that connects (or reconnects after the bot was away) gets the current state at once
and needs no history. ``/status`` answers a page's reconnection probe: logged in or not, and
the tables running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.frontends.console.guard import require_dm, role_of, session_of

__all__ = ["Pulse", "pulse_routes"]

log = logging.getLogger(__name__)

_QUEUE = 64
_KEEPALIVE_S = 15.0
_REFRESH_S = 20.0
"""How often the counts no event announces (facts NPCs proposed) are read again while a DM
page is open."""


@dataclass(slots=True, eq=False)
class _Page:
    owner: Any
    queue: asyncio.Queue[tuple[str, str] | None] = field(
        default_factory=lambda: asyncio.Queue(_QUEUE)
    )


class Pulse:
    """The DM pages' shared stream (module docstring)."""

    def __init__(self, hub: Any) -> None:
        self.hub = hub
        """The ``ConsoleHub`` (not imported: the hub owns the pulse)."""
        self.pages: set[_Page] = set()
        self.review_pending = 0
        self.count_review: Callable[[], Awaitable[int]] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def changed(self) -> None:
        """Something a DM page shows changed (an approval, a table): send it soon."""
        self._wake.set()

    def notice(self, html: str) -> None:
        """A notice for every DM page (shown for a while)."""
        self._send("notice", html)

    def subscribe(self, owner: Any) -> _Page:
        page = _Page(owner)
        self.pages.add(page)
        for name, html in self.state():
            page.queue.put_nowait((name, html))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="console:pulse")
        self._wake.set()  # counts read afresh for the newcomer
        return page

    def unsubscribe(self, page: _Page) -> None:
        self.pages.discard(page)

    def close_pages_of(self, owners: set[int]) -> None:
        for page in list(self.pages):
            if id(page.owner) in owners:
                with contextlib.suppress(asyncio.QueueFull):
                    page.queue.put_nowait(None)

    async def close(self) -> None:
        for page in list(self.pages):
            with contextlib.suppress(asyncio.QueueFull):
                page.queue.put_nowait(None)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def state(self) -> list[tuple[str, str]]:
        """Every block of the pulse as it is now."""
        render = self.hub.renderer.fragment
        tables = list(self.hub.tables.values())
        waiting = sum(len(feed.approver.pending) for feed in tables)
        return [
            ("dock", render("approval_dock", tables=tables)),
            ("counts", render("nav_counts", approvals=waiting, review=self.review_pending)),
            ("tables", render("table_list", tables=tables)),
        ]

    async def _run(self) -> None:
        while self.pages:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), _REFRESH_S)
            self._wake.clear()
            if self.count_review is not None:
                try:
                    self.review_pending = await self.count_review()
                except Exception as error:  # a count on a page, never worth failing for
                    log.debug("console: could not count the facts to review: %s", error)
            for name, html in self.state():
                self._send(name, html)

    def _send(self, name: str, html: str) -> None:
        for page in list(self.pages):
            try:
                page.queue.put_nowait((name, html))
            except asyncio.QueueFull:  # a page that reads nothing: it reconnects afresh
                self.pages.discard(page)


def _sse(name: str, html: str) -> str:
    data = "\n".join(f"data: {line}" for line in (html.splitlines() or [""]))
    return f"event: {name}\n{data}\n\n"


async def pulse(request: Request) -> Response:
    require_dm(request)
    hub = request.app.state.hub
    owner = session_of(request)
    page = hub.pulse.subscribe(owner)

    async def stream() -> AsyncIterator[str]:
        try:
            yield "retry: 2000\n: glyphoxa pulse\n\n"
            while owner is not None and not owner.revoked:
                try:
                    item = await asyncio.wait_for(page.queue.get(), _KEEPALIVE_S)
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                if item is None:
                    break
                yield _sse(*item)
        finally:
            hub.pulse.unsubscribe(page)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


async def status(request: Request) -> Response:
    """A page's reconnection probe: its role (401 when logged out) and the tables running."""
    role = role_of(request)
    if role is None:
        return JSONResponse({"role": None}, status_code=401)
    hub = request.app.state.hub
    return JSONResponse({"role": role, "tables": sorted(hub.tables)})


def pulse_routes() -> list[Route]:
    return [Route("/pulse", pulse), Route("/status", status)]
