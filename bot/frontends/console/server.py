"""Serving the console on the bot's own event loop (uvicorn, no thread, no process).

The socket is bound before anything else, so a taken port is reported at once with its fix;
uvicorn's own signal handling is left out (the bot owns Ctrl+C). While it serves, the link file
(``console.link_file``) tells ``glyphoxa console link`` where the console is and the key to
sign login links with; it is removed when the console stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from bot.frontends.checking import run_check
from bot.frontends.console.app import make_app
from bot.frontends.console.hub import ConsoleHub, PrepContext
from bot.frontends.console.links import remove_link_file, write_link_file
from bot.frontends.console.shield import TimedH11
from bot.settings.config import LOOPBACK_HOSTS, GlyphoxaConfig
from campaigns.basics import GlyphoxaError

__all__ = ["ConsoleServer", "console_for"]

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the bot handles signals, not uvicorn
        yield


class ConsoleServer:
    """``async with ConsoleServer(hub) as server:`` serves ``hub`` at ``server.url``."""

    def __init__(self, hub: ConsoleHub) -> None:
        self.hub = hub
        self.url = ""
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._app: Any = None
        self._warm: asyncio.Future[None] | None = None
        self._link_file = Path(hub.prep.config.console.link_file)

    async def __aenter__(self) -> ConsoleServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> str:
        """Listen, serve and write the link file; returns the console's base URL.

        Raises:
            GlyphoxaError: the address is taken or cannot be used (named with the setting).
        """
        settings = self.hub.prep.config.console
        sock = _bind(settings.host, settings.port)
        port = sock.getsockname()[1]
        if settings.host not in LOOPBACK_HOSTS:
            log.warning(
                "console: listening on %s:%d, reachable from the network "
                "(console.allow_network); anyone with a login link can steer the table",
                settings.host, port,
            )  # fmt: skip
        self.url = f"http://{_link_host(settings.host)}:{port}"
        self.hub.base_url = self.url
        self._app = make_app(self.hub)
        proxies = settings.trusted_proxies  # else X-Forwarded-For is nobody's word
        config = uvicorn.Config(
            self._app, log_level="warning", access_log=False, lifespan="off", ws="none",
            http=TimedH11, timeout_graceful_shutdown=1, proxy_headers=bool(proxies),
            forwarded_allow_ips=list(proxies) or None, server_header=False,
        )  # fmt: skip
        config.read_timeout_s = settings.read_timeout_s  # type: ignore[attr-defined]  # TimedH11's
        self._server = _Server(config)
        self._task = asyncio.get_running_loop().create_task(
            self._server.serve(sockets=[sock]), name="console:server"
        )
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise GlyphoxaError("the console stopped while starting")
            await asyncio.sleep(0.01)
        write_link_file(self._link_file, self.url, self.hub.links, settings.link_minutes)
        log.info("console: serving %s", self.url)
        self._warm = asyncio.get_running_loop().run_in_executor(None, self._warm_up)
        return self.url

    def _warm_up(self) -> None:
        """The editor's first check imports what ``glyphoxa check`` needs (a second of
        imports that would hold the interpreter while a table plays), and the world's graph
        is laid out: done now instead."""
        prep = self.hub.prep
        try:
            run_check(prep.campaign_dir, config_path=prep.config_path)
            self._app.state.prep_data.world()  # reads (and keeps) the campaign too
        except Exception as error:  # only a head start; the editor reports problems itself
            log.debug("console: warming the checks failed: %s", error)

    async def stop(self) -> None:
        """Close every page, stop serving and remove the link file."""
        remove_link_file(self._link_file)
        await self.hub.close()
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._task, 5.0)
            if not self._task.done():
                self._task.cancel()
        if self._warm is not None:
            with contextlib.suppress(Exception):
                await self._warm
        if self._app is not None:
            await self._app.state.prep_data.aclose()
            for task in list(self._app.state.tasks):
                task.cancel()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every response waited 40 ms for the client's delayed ACK (Nagle's algorithm).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise GlyphoxaError(
                f"console: {host}:{port} is in use (another Glyphoxa?); set console.port to a "
                "free port (0 picks one), or console.enabled: false"
            ) from None
        raise GlyphoxaError(f"console: cannot listen on {host}:{port}: {error}") from None
    sock.setblocking(False)
    return sock


def _link_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


def console_for(
    config: GlyphoxaConfig,
    *,
    config_path: Path | None,
    campaign_dir: Path | None = None,
    memory_url: str | None = None,
) -> ConsoleServer:
    """A console (not yet started) for the bot running with ``config``."""
    prep = PrepContext(
        config=config,
        config_path=config_path,
        campaign_dir=Path(campaign_dir or config.campaign.path),
        memory_url=memory_url or config.memory.url,
    )
    return ConsoleServer(ConsoleHub(prep))
