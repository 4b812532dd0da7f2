"""Who may do what: server-side sessions, roles and CSRF tokens.

A browser gets a session only by opening a login link (the DM) or a read-only link (a
player). The cookie (HttpOnly, SameSite=Strict) holds only a random id; the role and the
page's CSRF token live in the bot (``bot.frontends.console.sessions``), so logging out ends a
session at once. Every change (POST) must carry the session's CSRF token in the ``X-CSRF-Token``
header (htmx sends it) or a ``csrf`` form field, and come from this console's own pages
(``bot.frontends.console.shield`` checks ``Origin`` and ``Sec-Fetch-Site`` first); otherwise it is
refused with 403. A request without a session gets 401 and the page that says how to log in.
"""

from __future__ import annotations

import hmac
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from bot.frontends.console.sessions import ConsoleSession, SessionStore, current_session, set_cookie
from bot.frontends.console.shield import MAX_BODY

__all__ = [
    "check_csrf",
    "csrf_of",
    "log_in",
    "log_out",
    "require_dm",
    "require_viewer",
    "role_of",
    "session_of",
]


def session_of(request: Request) -> ConsoleSession | None:
    """The browser's live session, if any."""
    return current_session(request.scope)


def csrf_of(request: Request) -> str:
    session = session_of(request)
    return session.csrf if session is not None else ""


def log_in(request: Request, role: str, share: str | None = None) -> ConsoleSession:
    """Start a fresh session (new id, new CSRF token) for ``role`` (``dm`` or ``viewer``);
    the browser's previous session ends."""
    store: SessionStore = request.app.state.sessions
    old = session_of(request)
    if old is not None:
        store.revoke(old)
    token, session = store.create(role, share)
    set_cookie(request.scope, token)
    request.scope["glyphoxa.session"] = session
    return session


def log_out(request: Request) -> None:
    """End this browser's session and clear its cookie."""
    session = session_of(request)
    if session is not None:
        request.app.state.sessions.revoke(session)
    set_cookie(request.scope, "")


def role_of(request: Request) -> str | None:
    """``dm``, ``viewer`` (while its read-only link lives) or None."""
    session = session_of(request)
    if session is None:
        return None
    if session.role == "dm":
        return "dm"
    if session.role == "viewer" and request.app.state.hub.shares.alive(session.share):
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
    """Refuse a change without the session's CSRF token (403); returns the form fields (400
    for a form that cannot be read)."""
    expected = csrf_of(request)
    sent: Any = request.headers.get("x-csrf-token")
    form: dict[str, Any] = {}
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        try:
            raw = await request.form(max_files=0, max_fields=64, max_part_size=MAX_BODY)
        except HTTPException:
            raise
        except (ValueError, KeyError, AssertionError, UnicodeDecodeError) as error:
            raise HTTPException(400, f"this form cannot be read: {error}") from None
        form = {key: value for key, value in raw.items() if isinstance(value, str)}
        sent = sent or form.get("csrf")
    if not expected or not isinstance(sent, str) or not _same(expected, sent):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")
    return form


def _same(expected: str, sent: str) -> bool:
    """Constant-time comparison that any text may reach (non-ASCII included)."""
    return hmac.compare_digest(expected.encode(), sent.encode("utf-8", "replace"))
