"""Real streamable-HTTP MCP servers on 127.0.0.1 for the tool host tests.

``BearerMcpServer`` requires a static bearer token; ``OAuthMcpServer`` accepts only access
tokens its own ``/token`` endpoint issued (OAuth 2.1 client credentials, client_secret_basic)
and can revoke them all to force a refresh. ``AuthorizationServer`` is a separate local OAuth
authorization server (RFC 8414 metadata under an issuer path, client-credentials token
endpoint), and ``ProtectedMcpServer`` an MCP server that the mcp SDK itself protects with it
(RFC 9728 protected-resource metadata, 401 with ``resource_metadata``). Each runs uvicorn on
its own thread and loop.
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

__all__ = ["AuthorizationServer", "BearerMcpServer", "OAuthMcpServer", "ProtectedMcpServer"]


def build_mcp_app(**auth: Any) -> Any:
    server = MCPServer("remote-lore", **auth)

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
    def __init__(self, app: Any, port: int = 0, build: Any = None) -> None:
        """Serve ``app``, or ``build(base_url)`` once the port is known."""
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port = self._sock.getsockname()[1]
        if build is not None:
            app = build(f"http://127.0.0.1:{self.port}")
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


class AuthorizationServer(_ThreadedServer):
    """A local OAuth authorization server: metadata at the RFC 8414 path-aware location of the
    issuer ``/realms/table``, and a client-credentials token endpoint."""

    def __init__(self, client_id: str, client_secret: str) -> None:
        self.client_id, self.client_secret = client_id, client_secret
        self.issued: dict[str, str | None] = {}
        """Access token -> the resource (RFC 8707) it was issued for."""
        self.token_requests = 0
        self.metadata_requests = 0

        def build(base: str) -> Any:
            issuer = f"{base}/realms/table"

            async def metadata(request: Request) -> JSONResponse:
                self.metadata_requests += 1
                return JSONResponse(
                    {
                        "issuer": issuer,
                        "authorization_endpoint": f"{issuer}/authorize",
                        "token_endpoint": f"{issuer}/token",
                        "grant_types_supported": ["client_credentials"],
                        "response_types_supported": ["token"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                    }
                )

            async def token(request: Request) -> JSONResponse:
                self.token_requests += 1
                form = await request.form()
                basic = request.headers.get("authorization", "").removeprefix("Basic ")
                try:
                    cid, secret = base64.b64decode(basic).decode().split(":", 1)
                except ValueError:
                    return JSONResponse({"error": "invalid_client"}, status_code=401)
                if (cid, secret) != (self.client_id, self.client_secret):
                    return JSONResponse({"error": "invalid_client"}, status_code=401)
                value = secrets.token_urlsafe(16)
                resource = form.get("resource")
                self.issued[value] = resource if isinstance(resource, str) else None
                return JSONResponse({"access_token": value, "token_type": "Bearer"})

            from starlette.applications import Starlette
            from starlette.routing import Route

            return Starlette(
                routes=[
                    Route("/.well-known/oauth-authorization-server/realms/table", metadata),
                    Route("/realms/table/token", token, methods=["POST"]),
                ]
            )

        super().__init__(None, build=build)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/realms/table"


class ProtectedMcpServer(_ThreadedServer):
    """MCP over streamable HTTP protected by the SDK's own resource-server auth."""

    def __init__(self, authority: AuthorizationServer) -> None:
        from mcp.server.auth.provider import AccessToken
        from mcp.server.auth.settings import AuthSettings

        class Verifier:
            async def verify_token(self, token: str) -> AccessToken | None:
                if token not in authority.issued:
                    return None
                resource = authority.issued[token]
                return AccessToken(
                    token=token, client_id=authority.client_id, scopes=[], resource=resource
                )

        def build(base: str) -> Any:
            settings = AuthSettings(
                issuer_url=authority.issuer,
                resource_server_url=f"{base}/mcp",
                validate_token_resource=True,  # a token for another resource is refused
            )
            return build_mcp_app(auth=settings, token_verifier=Verifier())

        super().__init__(None, build=build)
