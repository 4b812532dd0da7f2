"""Who may do what: the signed session cookie, CSRF tokens and the security headers.

A browser gets a session only by opening a login link (the DM) or a read-only link (a
player). The session lives in a signed, HttpOnly, SameSite=Strict cookie (Starlette's
``SessionMiddleware``, keyed fresh by each bot process); it holds the role and the page's CSRF
token, nothing secret. Every change (POST) must carry that token in the ``X-CSRF-Token``
header (htmx sends it) or a ``csrf`` form field; otherwise it is refused with 403. A request
without a session gets 401 and the page that says how to log in.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "SecurityHeaders",
    "check_csrf",
    "log_in",
    "require_dm",
    "require_viewer",
    "role_of",
]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def log_in(request: Request, role: str, share: str | None = None) -> None:
    """Start a fresh session (a new CSRF token) for ``role`` (``dm`` or ``viewer``)."""
    request.session.clear()
    request.session.update({"role": role, "csrf": secrets.token_urlsafe(24)})
    if share is not None:
        request.session["share"] = share


def role_of(request: Request) -> str | None:
    """``dm``, ``viewer`` (while its read-only link lives) or None."""
    role = request.session.get("role")
    if role == "dm":
        return "dm"
    if role == "viewer" and request.app.state.hub.shares.alive(request.session.get("share")):
        return "viewer"
    return None


def require_viewer(request: Request) -> str:
    """The role of a logged-in browser (the DM or a read-only viewer); else 401."""
    role = role_of(request)
    if role is None:
        raise HTTPException(401, "log in with a link from /console or glyphoxa console link")
    return role


def require_dm(request: Request) -> None:
    """Only the DM; a read-only viewer gets 403, nobody else 401."""
    if require_viewer(request) != "dm":
        raise HTTPException(403, "this read-only link shows the live table only")


async def check_csrf(request: Request) -> dict[str, Any]:
    """Refuse a change without the session's CSRF token (403); returns the form fields."""
    expected = request.session.get("csrf")
    sent = request.headers.get("x-csrf-token")
    form: dict[str, Any] = {}
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = dict(await request.form())
        sent = sent or form.get("csrf")
    if not expected or not isinstance(sent, str) or not hmac.compare_digest(expected, sent):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")
    return form


class SecurityHeaders:
    """Adds the content security policy and friends to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                extra = {
                    b"content-security-policy": CSP.encode(),
                    b"x-frame-options": b"DENY",
                    b"x-content-type-options": b"nosniff",
                    b"referrer-policy": b"no-referrer",
                    b"cross-origin-opener-policy": b"same-origin",
                }
                if not scope["path"].startswith("/static/"):
                    extra[b"cache-control"] = b"no-store"
                headers += [(name, value) for name, value in extra.items() if name not in names]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
