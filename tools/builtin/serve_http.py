"""Serve a ``BuiltinServer`` over MCP streamable HTTP: Glyphoxa's tools as a remote server.

The same low-level MCP server as over stdio (``tools.builtin.serve``), mounted at ``/mcp`` by the
mcp SDK's streamable-HTTP app and run by uvicorn. With a bearer token every request must carry
``Authorization: Bearer <token>`` (compared in constant time); without one the server only
listens on a loopback address, so an open tool server is never exposed by accident.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from campaigns.basics import GlyphoxaError
from tools.builtin.serve import build_mcp_server
from tools.spec import BuiltinServer

__all__ = ["BearerGate", "parse_listen_address", "serve_http"]

log = logging.getLogger(__name__)


class BearerGate:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>``; lifespan passes through."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    def __repr__(self) -> str:  # never show the token
        return "BearerGate(...)"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not secrets.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer error="invalid_token"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
                return
        await self._app(scope, receive, send)


class _Server(uvicorn.Server):
    """uvicorn's server with an event for "the socket listens"."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.listening.set()


def parse_listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) as a pair; a bad value is a clear error."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise GlyphoxaError(f"--http expects HOST:PORT such as 127.0.0.1:8765, got {value!r}")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve_http(
    server: BuiltinServer,
    host: str,
    port: int,
    *,
    bearer_token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``server`` at ``http://host:port/mcp`` until cancelled (Ctrl-C).

    Args:
        bearer_token: Required on every request when given.
        on_ready: Called with the endpoint URL once the socket listens (port 0 picks one).
    """
    if bearer_token is None and not _is_loopback(host):
        raise GlyphoxaError(
            f"serving {server.name} on {host} without a bearer token would let anyone on the "
            "network call it; use --bearer-token-env VAR or a loopback address"
        )
    app: Any = build_mcp_server(server).streamable_http_app(host=host)
    if bearer_token is not None:
        app = BearerGate(app, bearer_token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise GlyphoxaError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/mcp"
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    runner = _Server(config)
    if server.startup is not None:
        await server.startup()
    serving = asyncio.create_task(runner.serve(sockets=[sock]), name=f"serve-tool:{server.name}")
    try:
        listening = asyncio.create_task(runner.listening.wait())
        await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if runner.started:
            log.info("serving %s at %s", server.name, url)
            if on_ready is not None:
                on_ready(url)
        # Shielded: a cancelled uvicorn skips its shutdown and leaves the listening socket
        # registered with the event loop; it must always be told to exit and then awaited.
        await asyncio.shield(serving)
    finally:
        if not serving.done():
            runner.should_exit = runner.force_exit = True  # do not wait for open SSE streams
            await asyncio.gather(serving, return_exceptions=True)
        sock.close()
        if server.shutdown is not None:
            await server.shutdown()
