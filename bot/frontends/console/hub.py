"""The console's side of one bot process: the tables it watches and who may look.

``glyphoxa run`` and ``glyphoxa rehearse --console`` make one :class:`ConsoleHub`; a table
that opens calls :meth:`ConsoleHub.attach` and :meth:`ConsoleHub.detach` when it ends. The hub
holds nothing a table needs: dropping it (or the console crashing) leaves every table as it was.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.frontends.console.feed import TableFeed
from bot.frontends.console.links import LinkKey, ShareLinks
from bot.frontends.console.pulse import Pulse
from bot.frontends.console.render import Renderer
from bot.frontends.console.sessions import SessionStore
from bot.settings.config import GlyphoxaConfig

__all__ = ["ConsoleHub", "PrepContext"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PrepContext:
    """What the preparation pages read and write: the config the bot runs with (and its file,
    for ``check``), the campaign folder, and the campaign memory's URL."""

    config: GlyphoxaConfig
    config_path: Path | None
    campaign_dir: Path
    memory_url: str


@dataclass(slots=True)
class ConsoleHub:
    """Tables, login links and read-only links of one console."""

    prep: PrepContext
    renderer: Renderer = field(default_factory=Renderer)
    links: LinkKey = field(default_factory=LinkKey)
    shares: ShareLinks = field(default_factory=ShareLinks)
    tables: dict[str, TableFeed] = field(default_factory=dict)
    base_url: str = ""
    """``http://host:port`` once the server listens."""
    logged_in: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the DM opened a login link (``glyphoxa rehearse --console`` waits for it)."""
    ended: dict[str, str | None] = field(default_factory=dict)
    """Table id -> its campaign-memory session id, for tables that ended (their URL leads to
    the session's record)."""
    pulse: Pulse = field(init=False)
    sessions: SessionStore = field(init=False)
    """Logged-in browsers; kept by the hub, so a console restarted in the same process keeps
    them (a restart of the bot ends them all)."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.pulse = Pulse(self)
        hours = self.prep.config.console.session_hours
        self.sessions = SessionStore(hours, on_revoke=self.close_pages_of)

    def attach(
        self,
        session: Any,
        label: str,
        *,
        members: Callable[[], list[str]] | None = None,
        on_end: Callable[[], Awaitable[object]] | None = None,
    ) -> TableFeed:
        """Watch a started table. ``members``: who is in its voice channel (default: the
        speakers it heard); ``on_end``: how the DM's "End session" ends it."""
        table_id = str(next(self._ids))
        feed = TableFeed(
            table_id, label, session, self.renderer, members=members, on_end=on_end
        )  # fmt: skip
        feed.pulse = self.pulse
        feed.start()
        self.tables[table_id] = feed
        self.pulse.changed()
        log.info("console: watching table %s (%s)", table_id, label)
        return feed

    async def detach(self, feed: TableFeed) -> None:
        """Stop watching a table (it ended); its page says so and leads to its record."""
        self.tables.pop(feed.id, None)
        recorder = getattr(feed.session, "recorder", None)
        self.ended[feed.id] = getattr(recorder, "session_id", None)
        feed.record_id = self.ended[feed.id]
        await feed.stop()
        self.pulse.changed()

    async def close(self) -> None:
        for feed in list(self.tables.values()):
            await self.detach(feed)
        await self.pulse.close()

    def close_pages_of(self, sessions: list[Any]) -> None:
        """End the live pages of browsers whose console session ended (logged out)."""
        ended = {id(session) for session in sessions}
        self.pulse.close_pages_of(ended)
        for feed in self.tables.values():
            for subscriber in list(feed.subscribers):
                if id(subscriber.owner) in ended:
                    subscriber.close()

    def feed_of(self, session: Any) -> TableFeed | None:
        return next((f for f in self.tables.values() if f.session is session), None)

    def login_url(self) -> str:
        """A one-time login link for the DM (``/console`` and ``glyphoxa console link``)."""
        token = self.links.mint(self.prep.config.console.link_minutes)
        return f"{self.base_url}/login/{token}"

    def session_running(self) -> Any | None:
        """The session of the first table watched (prep pages use its tool host and memory)."""
        feed = next(iter(self.tables.values()), None)
        return feed.session if feed is not None else None
