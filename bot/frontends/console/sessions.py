"""Server-side sessions: the cookie holds a random id, the bot holds what it means.

A signed cookie that carries the role cannot be taken back: a copy made before logout would
open every page until it expires. Here the cookie is only a random id (256 bits); the session
(role, CSRF token, read-only link) lives in the bot's memory, so logout and "log out
everywhere" end it at once, for every request and every open live page, and a restart ends
them all. Ids are kept as their SHA-256, so even a dump of the store opens nothing.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "COOKIE",
    "ConsoleSession",
    "SessionCookies",
    "SessionStore",
    "current_session",
    "set_cookie",
]

COOKIE = "glyphoxa_console"
_MAX_SESSIONS = 512
"""Browsers a console remembers at once (each read-only link opened makes one); the oldest
goes first."""
_SCOPE = "glyphoxa.session"
_SET = "glyphoxa.set_cookie"


@dataclass(slots=True, eq=False)
class ConsoleSession:
    """One logged-in browser."""

    role: str
    csrf: str
    share: str | None
    created: float
    expires: float
    revoked: bool = False

    def __repr__(self) -> str:  # the CSRF token never reaches a log
        return f"ConsoleSession(role={self.role!r}, revoked={self.revoked})"


@dataclass(slots=True)
class SessionStore:
    """Every live session of one console, by the SHA-256 of its cookie."""

    hours: float
    on_revoke: Callable[[list[ConsoleSession]], None] = lambda sessions: None
    _sessions: dict[str, ConsoleSession] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"SessionStore({len(self._sessions)} sessions)"

    def create(self, role: str, share: str | None = None) -> tuple[str, ConsoleSession]:
        """A new session and the cookie value that opens it."""
        now = time.time()
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        while len(self._sessions) >= _MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda k: self._sessions[k].created)
            self._end([self._sessions.pop(oldest)])
        token = secrets.token_urlsafe(32)
        session = ConsoleSession(
            role, secrets.token_urlsafe(24), share, now, now + self.hours * 3600
        )  # fmt: skip
        self._sessions[_digest(token)] = session
        return token, session

    def get(self, token: str | None) -> ConsoleSession | None:
        """The live session of a cookie value; None when unknown, revoked or expired."""
        if not token or len(token) > 128:
            return None
        key = _digest(token)
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires <= time.time():
            self._end([self._sessions.pop(key)])
            return None
        return session

    def revoke(self, session: ConsoleSession) -> None:
        """Log one browser out."""
        self._sessions = {k: s for k, s in self._sessions.items() if s is not session}
        self._end([session])

    def revoke_role(self, role: str) -> int:
        """Log every browser of ``role`` out (the DM's "log out everywhere")."""
        ended = [s for s in self._sessions.values() if s.role == role]
        self._sessions = {k: s for k, s in self._sessions.items() if s.role != role}
        self._end(ended)
        return len(ended)

    def count(self, role: str) -> int:
        now = time.time()
        return sum(1 for s in self._sessions.values() if s.role == role and s.expires > now)

    def _end(self, sessions: list[ConsoleSession]) -> None:
        for session in sessions:
            session.revoked = True
        if sessions:
            self.on_revoke(sessions)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def current_session(scope: Scope) -> ConsoleSession | None:
    """The request's live session (set by :class:`SessionCookies`)."""
    session: ConsoleSession | None = scope.get(_SCOPE)
    return session if session is not None and not session.revoked else None


def set_cookie(scope: Scope, token: str) -> None:
    """Send ``token`` as the session cookie with this response ('' clears it)."""
    scope[_SET] = token


class SessionCookies:
    """Looks the cookie up for every request and sets or clears it when asked."""

    def __init__(self, app: ASGIApp, store: SessionStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[_SCOPE] = self.store.get(_cookie(scope))

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and _SET in scope:
                message["headers"] = [
                    *message.get("headers", []),
                    (b"set-cookie", self._cookie_header(scope[_SET])),
                ]
            await send(message)

        await self.app(scope, receive, with_cookie)

    def _cookie_header(self, token: str) -> bytes:
        age = int(self.store.hours * 3600) if token else 0
        return (
            f"{COOKIE}={token}; Path=/; Max-Age={age}; HttpOnly; SameSite=Strict".encode()
        )  # fmt: skip


def _cookie(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key, _, found = part.strip().partition("=")
            if key == COOKIE:
                return str(found)
    return None
