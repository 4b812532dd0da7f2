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
import secrets
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bot.config import LOOPBACK_HOSTS
from bot.console.guard import SecurityHeaders, check_csrf, log_in, require_dm, role_of
from bot.console.hub import ConsoleHub
from bot.console.prep_data import PrepData
from bot.console.render import render_page
from bot.console.routes_live import live_routes
from bot.console.routes_prep import prep_routes

__all__ = ["COOKIE", "STATIC", "make_app"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
COOKIE = "glyphoxa_console"


def make_app(hub: ConsoleHub) -> Starlette:
    """The console for ``hub``; serve it with ``bot.console.server.ConsoleServer``."""
    settings = hub.prep.config.console
    middleware = [Middleware(SecurityHeaders)]
    if not settings.allow_network:  # a DNS-rebinding page cannot pose as this host
        hosts = [*LOOPBACK_HOSTS, f"[{settings.host}]" if ":" in settings.host else settings.host]
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts))
    middleware.append(
        Middleware(
            SessionMiddleware,
            secret_key=secrets.token_urlsafe(32),
            session_cookie=COOKIE,
            max_age=int(settings.session_hours * 3600),
            same_site="strict",
            https_only=False,
        )
    )
    routes = [
        Route("/", home),
        Route("/login/{token}", login),
        Route("/view/{token}", view_link),
        Route("/logout", logout, methods=["POST"]),
        Route("/share", share_page),
        Route("/share", share_change, methods=["POST"]),
        *live_routes(),
        *prep_routes(),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error},  # type: ignore[dict-item]
    )
    app.state.hub = hub
    app.state.prep_data = PrepData(hub)
    app.state.tasks = set()
    app.state.page = lambda request, template, **values: _page(hub, request, template, values)
    app.state.spawn = lambda coroutine, name: _spawn(app, coroutine, name)
    return app


def _page(hub: ConsoleHub, request: Request, template: str, values: dict[str, Any]) -> Response:
    role = role_of(request)
    html = hub.renderer.page(
        template,
        role=role,
        csrf=request.session.get("csrf", ""),
        tables=list(hub.tables.values()),
        campaign=hub.prep.campaign_dir.name,
        path=request.url.path,
        **values,
    )
    return HTMLResponse(html)


def _spawn(app: Starlette, coroutine: Coroutine[Any, Any, Any], name: str) -> None:
    task = asyncio.get_running_loop().create_task(coroutine, name=name)
    app.state.tasks.add(task)
    task.add_done_callback(app.state.tasks.discard)


async def _http_error(request: Request, error: HTTPException) -> Response:
    hub: ConsoleHub = request.app.state.hub
    if request.headers.get("hx-request") or request.method != "GET":
        html = hub.renderer.fragment("flash", text=error.detail, error=True)
        return HTMLResponse(html, status_code=error.status_code)
    html = hub.renderer.page(
        "error.html",
        role=role_of(request),
        csrf=request.session.get("csrf", ""),
        tables=[],
        campaign=hub.prep.campaign_dir.name,
        path=request.url.path,
        status=error.status_code,
        detail=error.detail,
    )
    return HTMLResponse(html, status_code=error.status_code)


async def home(request: Request) -> Response:
    role = role_of(request)
    if role is None:
        raise HTTPException(401, "log in with a link from /console or glyphoxa console link")
    hub: ConsoleHub = request.app.state.hub
    if len(hub.tables) == 1:
        return RedirectResponse(f"/tables/{next(iter(hub.tables))}", status_code=303)
    return render_page(request, "home.html")


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
    await check_csrf(request)
    request.session.clear()
    return RedirectResponse("/", status_code=303)


async def share_page(request: Request) -> Response:
    require_dm(request)
    hub: ConsoleHub = request.app.state.hub
    return render_page(request, "share.html", shares=len(hub.shares), link=None)


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
    return render_page(request, "share.html", shares=len(hub.shares), link=link)
