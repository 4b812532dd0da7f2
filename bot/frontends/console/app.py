"""The console's ASGI application: Starlette routes, server-side templates, vendored scripts.

Starlette is a small ASGI toolkit (routing, sessions, streaming responses, static files) that
runs on the bot's own event loop through uvicorn; pages are rendered on the server with Jinja,
and htmx (with its SSE extension) swaps the server's fragments into the page, so the console
needs no JavaScript build and no Node toolchain: the few vendored scripts are committed, pinned
and checked against ``static/vendor/MANIFEST.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from bot.frontends.console.guard import check_csrf, csrf_of, log_in, log_out, require_dm, role_of
from bot.frontends.console.hub import ConsoleHub
from bot.frontends.console.prep_data import PrepData
from bot.frontends.console.pulse import pulse_routes
from bot.frontends.console.render import render_page
from bot.frontends.console.routes_live import live_routes
from bot.frontends.console.routes_prep import prep_routes
from bot.frontends.console.sessions import COOKIE, SessionCookies
from bot.frontends.console.shield import Shield
from bot.settings.config import LOOPBACK_HOSTS

__all__ = ["COOKIE", "STATIC", "make_app"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


class _Id(Convertor[int]):
    """A database or approval id: 1 to 18 digits (anything longer matches no route: 404)."""

    regex = "[0-9]{1,18}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("id", _Id())


class _ConsoleApp(Starlette):
    """Starlette with the :class:`Shield` outside everything, its error handling included, so
    every response carries the security headers and no error escapes as a traceback."""

    def build_middleware_stack(self) -> ASGIApp:
        return Shield(super().build_middleware_stack(), error_page=self.state.error_page)


def make_app(hub: ConsoleHub) -> Starlette:
    """The console for ``hub``; serve it with ``bot.frontends.console.server.ConsoleServer``."""
    settings = hub.prep.config.console
    sessions = hub.sessions
    middleware = []
    if not settings.allow_network:  # a DNS-rebinding page cannot pose as this host
        hosts = [*LOOPBACK_HOSTS, f"[{settings.host}]" if ":" in settings.host else settings.host]
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts))
    middleware.append(Middleware(SessionCookies, store=sessions))
    routes = [
        Route("/", home),
        Route("/login/{token}", login),
        Route("/view/{token}", view_link),
        Route("/logout", logout, methods=["POST"]),
        Route("/share", share_page),
        Route("/share", share_change, methods=["POST"]),
        *live_routes(),
        *prep_routes(),
        *pulse_routes(),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = _ConsoleApp(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error},  # type: ignore[dict-item]
    )
    app.state.error_page = lambda status, detail: _error_html(hub, status, detail)
    app.state.sessions = sessions
    app.state.hub = hub
    app.state.prep_data = PrepData(hub)
    hub.pulse.count_review = app.state.prep_data.count_review
    app.state.tasks = set()
    app.state.page = lambda request, template, **values: _page(hub, request, template, values)
    app.state.spawn = lambda coroutine, name: _spawn(app, coroutine, name)
    return app


def _page(hub: ConsoleHub, request: Request, template: str, values: dict[str, Any]) -> Response:
    role = role_of(request)
    status = values.pop("status_code", 200)
    csrf = csrf_of(request)
    dock, counts = "", (0, 0)
    if role == "dm":  # without JavaScript the dock is only what the page was rendered with
        tables = list(hub.tables.values())
        dock = hub.renderer.fragment("approval_dock", tables=tables, csrf=csrf)
        waiting = sum(len(feed.approver.pending) for feed in tables)
        counts = (waiting, hub.pulse.review_pending)
    html = hub.renderer.page(
        template,
        role=role,
        csrf=csrf,
        tables=list(hub.tables.values()),
        campaign=hub.prep.campaign_dir.name,
        path=request.url.path,
        dock=dock,
        counts=counts,
        **values,
    )
    return HTMLResponse(html, status_code=status)


def _spawn(app: Starlette, coroutine: Coroutine[Any, Any, Any], name: str) -> None:
    task = asyncio.get_running_loop().create_task(coroutine, name=name)
    app.state.tasks.add(task)
    task.add_done_callback(app.state.tasks.discard)


async def _http_error(request: Request, error: HTTPException) -> Response:
    hub: ConsoleHub = request.app.state.hub
    if request.headers.get("hx-request"):
        html = hub.renderer.fragment("flash", text=error.detail, error=True)
        return HTMLResponse(html, status_code=error.status_code)
    html = hub.renderer.page(
        "error.html",
        role=role_of(request),
        csrf=csrf_of(request),
        tables=[],
        campaign=hub.prep.campaign_dir.name,
        path=request.url.path,
        status=error.status_code,
        detail=error.detail,
        dock="",
        counts=(0, 0),
    )
    return HTMLResponse(html, status_code=error.status_code, headers=error.headers)


def _error_html(hub: ConsoleHub, status: int, detail: str) -> bytes:
    """An error page outside any route (the shield's): no session, no navigation."""
    html = hub.renderer.page(
        "error.html", role=None, csrf="", tables=[], campaign=hub.prep.campaign_dir.name,
        path="", status=status, detail=detail, dock="", counts=(0, 0),
    )  # fmt: skip
    return html.encode()


async def home(request: Request) -> Response:
    role = role_of(request)
    if role is None:
        raise HTTPException(401, "log in with a link from /console or glyphoxa console link")
    hub: ConsoleHub = request.app.state.hub
    if len(hub.tables) == 1:
        return RedirectResponse(f"/tables/{next(iter(hub.tables))}", status_code=303)
    return render_page(request, "home.html", waiting_for_table=not hub.tables)


async def login(request: Request) -> Response:
    hub: ConsoleHub = request.app.state.hub
    if not hub.links.redeem(request.path_params["token"]):
        raise HTTPException(
            401, "this login link is used, expired or from an earlier run: get a new one"
        )
    log_in(request, "dm")
    hub.logged_in.set()
    log.info("console: the DM logged in from %s", request.client.host if request.client else "?")
    return RedirectResponse("/", status_code=303)


async def view_link(request: Request) -> Response:
    hub: ConsoleHub = request.app.state.hub
    share = hub.shares.valid(request.path_params["token"])
    if share is None:
        raise HTTPException(401, "this read-only link was revoked; ask the DM for a new one")
    log_in(request, "viewer", share)
    return RedirectResponse("/", status_code=303)


async def logout(request: Request) -> Response:
    """Log this browser out; ``everywhere``: every browser logged in as the DM."""
    form = await check_csrf(request)
    if form.get("everywhere") and role_of(request) == "dm":
        count = request.app.state.sessions.revoke_role("dm")
        log.info("console: the DM logged out everywhere (%d browser(s))", count)
    log_out(request)
    return RedirectResponse("/", status_code=303)


async def share_page(request: Request) -> Response:
    require_dm(request)
    return _share(request, None)


def _share(request: Request, link: str | None) -> Response:
    hub: ConsoleHub = request.app.state.hub
    browsers = request.app.state.sessions.count("dm")
    return render_page(request, "share.html", shares=len(hub.shares), link=link, browsers=browsers)


async def share_change(request: Request) -> Response:
    require_dm(request)
    form = await check_csrf(request)
    hub: ConsoleHub = request.app.state.hub
    link = None
    if form.get("action") == "revoke":
        hub.shares.revoke_all()
        for feed in hub.tables.values():  # open read-only pages stop at once
            for subscriber in list(feed.subscribers):
                if not subscriber.dm:
                    with contextlib.suppress(asyncio.QueueFull):
                        subscriber.queue.put_nowait(None)
    else:
        link = f"{hub.base_url}/view/{hub.shares.create()}"
    return _share(request, link)
