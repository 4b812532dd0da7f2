"""The console's outer wall: what every request passes before any route sees it.

- Security headers (a strict content security policy and friends) on every response, error
  pages included.
- A change (any method but GET, HEAD, OPTIONS) from another site is refused before its CSRF
  token is even read: the browser's ``Sec-Fetch-Site`` must say same-origin (or none: typed,
  bookmarked) and an ``Origin`` must be this console's own.
- A request body is at most :data:`MAX_BODY` bytes (413 otherwise, counted as it arrives).
- An unexpected error answers a plain 500 page (with the headers) and one log line; its
  traceback goes to the debug log only. Malformed input is the routes' to refuse with a 4xx.

:class:`TimedH11` is uvicorn's HTTP/1.1 protocol with read timeouts: request headers must
arrive within ``console.read_timeout_s`` of a request's first byte, and a body may pause no
longer, so unfinished requests cannot hold connections open.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "CSP",
    "MAX_BODY",
    "SECURITY_HEADERS",
    "Shield",
    "TimedH11",
]

log = logging.getLogger(__name__)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    b"content-security-policy": CSP.encode(),
    b"x-frame-options": b"DENY",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",  # no-referrer would make a form's Origin "null"
    b"cross-origin-opener-policy": b"same-origin",
    b"cross-origin-resource-policy": b"same-origin",
}
MAX_BODY = 1024 * 1024
"""The largest request body (an NPC file is at most 256 KB; forms are small)."""
_READ_TIMEOUT_S = 10.0
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_SITES = frozenset({b"same-origin", b"none"})


class _TooLarge(Exception):
    pass


class Shield:
    """Headers, same-origin changes, body limit and the last word on errors (module doc)."""

    def __init__(self, app: ASGIApp, error_page: Any = None) -> None:
        self.app = app
        self.error_page = error_page
        """``(status, detail) -> bytes``: the HTML of an error page (plain text without)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        static = scope["path"].startswith("/static/")

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                extra = dict(SECURITY_HEADERS)
                if not static:
                    extra[b"cache-control"] = b"no-store"
                headers += [(name, value) for name, value in extra.items() if name not in names]
                message = {**message, "headers": headers}
            await send(message)

        refusal = _refusal(scope)
        if refusal is not None:
            await self._answer(guarded_send, 403, refusal)
            return
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            await self._answer(guarded_send, 413, _too_large())
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted_receive, guarded_send)
        except _TooLarge:
            if not started:
                await self._answer(guarded_send, 413, _too_large())
        except (ClientDisconnect, ConnectionError, asyncio.CancelledError) as error:
            if isinstance(error, asyncio.CancelledError):
                raise
            log.debug("console: %s %s: the client went away", scope["method"], scope["path"])
        except Exception as error:  # a bug: one line, the traceback only at debug level
            log.error(
                "console: %s %s failed: %s: %s (a bug in the console; run with -v for the "
                "traceback)", scope["method"], scope["path"], type(error).__name__, error,
            )  # fmt: skip
            log.debug("console: the traceback", exc_info=True)
            if not started:
                await self._answer(guarded_send, 500, "The console failed on this request.")

    async def _answer(self, send: Send, status: int, detail: str) -> None:
        if self.error_page is not None:
            body, kind = self.error_page(status, detail), b"text/html; charset=utf-8"
        else:
            body, kind = detail.encode(), b"text/plain; charset=utf-8"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _too_large() -> str:
    return f"the request is larger than {MAX_BODY // 1024} KB"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1").strip())
    return None


def _refusal(scope: Scope) -> str | None:
    """Why a change must be refused as coming from another site (None: it may go on)."""
    if scope["method"] in _SAFE:
        return None
    site = _header(scope, b"sec-fetch-site")
    if site is not None and site.encode() not in _SITES:
        return f"refused: this change came from another site (Sec-Fetch-Site: {site[:20]})"
    origin = _header(scope, b"origin")
    if origin == "null" and site == "same-origin":
        return None  # a browser's own word that the form is this console's
    if origin is not None:
        host = _header(scope, b"host") or ""
        scheme = scope.get("scheme", "http")
        if origin != f"{scheme}://{host}":
            return "refused: this change came from another origin"
    return None


class TimedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with header and body read timeouts (module doc)."""

    _read_timer: asyncio.TimerHandle | None = None

    @property
    def _timeout_s(self) -> float:
        return float(getattr(self.config, "read_timeout_s", _READ_TIMEOUT_S))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        try:
            super().data_received(data)
        except UnicodeDecodeError:  # bytes beyond ASCII in the request line
            self.send_400_response("Invalid HTTP request received.")
            return
        self._watch(progress=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self, *, progress: bool = False) -> None:
        """Arm the timer for what the connection waits for: headers (from the request's first
        byte, never reset) or a body (reset by every byte)."""
        if self.transport.is_closing():
            self._stop_timer()
            return
        state = self.conn.their_state
        if state is h11.IDLE and self.timeout_keep_alive_task is None:
            if self._read_timer is None:  # headers: the whole of them within the limit
                self._read_timer = self.loop.call_later(self._timeout_s, self._too_slow)
        elif state is h11.SEND_BODY:
            if progress or self._read_timer is None:
                self._stop_timer()
                self._read_timer = self.loop.call_later(self._timeout_s, self._too_slow)
        else:
            self._stop_timer()

    def _stop_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _too_slow(self) -> None:
        self._read_timer = None
        if not self.transport.is_closing():
            log.debug("console: closed a connection whose request came too slowly")
            self.transport.close()
