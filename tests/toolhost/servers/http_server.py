"""Real streamable-HTTP MCP servers on 127.0.0.1 for the tool host tests.

``BearerMcpServer`` requires a static bearer token; ``OAuthMcpServer`` accepts only access
tokens its own ``/token`` endpoint issued (OAuth 2.1 client credentials, client_secret_basic)
and can revoke them all to force a refresh. Each runs uvicorn on its own thread and loop.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = ["BearerMcpServer", "OAuthMcpServer"]


def build_mcp_app() -> Any:
    server = MCPServer("remote-lore")

    @server.tool(
        meta={
            "io.glyphoxa/latency": {
                "estimated_duration_ms": 30,
                "max_duration_ms": 1000,
                "idempotent": True,
            }
        }
    )
    async def lookup(key: str) -> str:
        """Look up a lore entry."""
        return f"lore about {key}"

    @server.tool(
        meta={"io.glyphoxa/latency": {"estimated_duration_ms": 800, "max_duration_ms": 3000}}
    )
    async def ponder(topic: str) -> str:
        """Think for a while (STANDARD tier)."""
        await asyncio.sleep(0.01)
        return f"pondered {topic}"

    return server.streamable_http_app(host="127.0.0.1")


class _ThreadedServer:
    def __init__(self, app: Any, port: int = 0) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        name = f"uvicorn:{self.port}"
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _serve(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("test HTTP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._server.force_exit = True  # do not wait for open SSE streams
        self._thread.join(10)
        self._sock.close()


class BearerMcpServer(_ThreadedServer):
    """MCP over streamable HTTP that answers 401 without ``Authorization: Bearer <token>``."""

    def __init__(self, token: str, port: int = 0) -> None:
        self.token = token
        self.rejected = 0
        inner = build_mcp_app()

        async def app(scope: dict, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                    self.rejected += 1
                    await JSONResponse({"error": "invalid_token"}, status_code=401)(
                        scope, receive, send
                    )
                    return
            await inner(scope, receive, send)

        super().__init__(app, port)


class OAuthMcpServer(_ThreadedServer):
    """MCP over streamable HTTP behind a local OAuth client-credentials token endpoint."""

    def __init__(self, client_id: str, client_secret: str, expires_in: int = 3600) -> None:
        self.client_id, self.client_secret, self.expires_in = client_id, client_secret, expires_in
        self.issued: set[str] = set()
        self.token_requests = 0
        inner = build_mcp_app()

        async def token(request: Request) -> JSONResponse:
            self.token_requests += 1
            form = await request.form()
            basic = request.headers.get("authorization", "")
            try:
                cid, secret = base64.b64decode(basic.removeprefix("Basic ")).decode().split(":", 1)
            except ValueError:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            if form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            if (cid, secret) != (self.client_id, self.client_secret):
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            value = secrets.token_urlsafe(16)
            self.issued.add(value)
            return JSONResponse(
                {"access_token": value, "token_type": "Bearer", "expires_in": self.expires_in}
            )

        async def app(scope: dict, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                if scope["path"] == "/token":
                    response = await token(Request(scope, receive))
                    await response(scope, receive, send)
                    return
                header = dict(scope["headers"]).get(b"authorization", b"").decode()
                if header.removeprefix("Bearer ") not in self.issued:
                    await JSONResponse({"error": "invalid_token"}, status_code=401)(
                        scope, receive, send
                    )
                    return
            await inner(scope, receive, send)

        super().__init__(app)

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    def revoke_all(self) -> None:
        self.issued.clear()
