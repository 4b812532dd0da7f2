"""HTTP auth for remote MCP servers: a static bearer token or OAuth 2.1 client credentials.

The mcp SDK's HTTP transport runs on ``httpx2``, so both are ``httpx2`` pieces: static headers,
or an ``httpx2.Auth`` that fetches an access token from the token endpoint, reuses it until
shortly before it expires, and fetches a fresh one when the server answers 401. Without a
configured ``token_url`` the endpoint is discovered from the server's OAuth metadata
(``tools.host.oauth_discovery``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator

import httpx2

from campaigns.basics import GlyphoxaError
from tools.config import BearerAuth, McpServerConfig, OAuthClientCredentials
from tools.host.oauth_discovery import TokenEndpoint, discover_token_endpoint

__all__ = ["ClientCredentialsAuth", "build_http_client"]

log = logging.getLogger(__name__)

#: Refresh this long before the token's announced expiry.
_EXPIRY_MARGIN_S = 10.0


class ClientCredentialsAuth(httpx2.Auth):
    """OAuth 2.1 client-credentials grant (client_secret_basic) with refresh on expiry or 401."""

    def __init__(
        self, config: OAuthClientCredentials, *, server_url: str = "", timeout_s: float = 10.0
    ) -> None:
        self._config = config
        self._server_url = server_url
        self._timeout_s = timeout_s
        self._endpoint: TokenEndpoint | None = None
        if config.token_url:
            self._endpoint = TokenEndpoint(config.token_url, config.issuer or "")
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0

    def __repr__(self) -> str:  # never show the secret or the token
        url = self._endpoint.url if self._endpoint is not None else None
        return f"ClientCredentialsAuth(token_url={url!r})"

    @property
    def token_url(self) -> str | None:
        """The configured or discovered token endpoint (None until discovered)."""
        return self._endpoint.url if self._endpoint is not None else None

    async def _current_token(self, *, force: bool) -> str:
        async with self._lock:
            fresh = self._token is not None and time.monotonic() < self._expires_at
            if force or not fresh:
                await self._fetch()
            assert self._token is not None
            return self._token

    async def _fetch(self) -> None:
        config = self._config
        form = {"grant_type": "client_credentials"}
        if config.scope:
            form["scope"] = config.scope
        auth = (config.client_id, config.client_secret.get_secret_value())
        async with httpx2.AsyncClient(timeout=self._timeout_s) as client:
            if self._endpoint is None:
                self._endpoint = await discover_token_endpoint(
                    client, self._server_url, issuer=config.issuer
                )
            url = self._endpoint.url
            if self._endpoint.resource:
                form["resource"] = self._endpoint.resource  # RFC 8707, as MCP asks
            try:
                response = await client.post(url, data=form, auth=auth)
            except httpx2.HTTPError as error:
                raise GlyphoxaError(f"token endpoint {url} unreachable: {error}") from None
        if response.status_code != 200:
            raise GlyphoxaError(
                f"token endpoint {url} refused client {config.client_id!r}: "
                f"HTTP {response.status_code}"
            )
        try:
            body = response.json()
            token = body["access_token"]
        except (ValueError, KeyError, TypeError):
            raise GlyphoxaError(f"token endpoint {url} sent no access_token") from None
        expires_in = body.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
        self._token = str(token)
        self._expires_at = time.monotonic() + max(0.0, lifetime - _EXPIRY_MARGIN_S)
        self.fetches += 1
        log.debug("fetched an access token from %s (expires in %.0f s)", url, lifetime)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._current_token(force=False)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            # Revoked or expired early: one retry with a freshly fetched token.
            token = await self._current_token(force=True)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request


def build_http_client(config: McpServerConfig) -> httpx2.AsyncClient:
    """The HTTP client the SDK transport uses for ``config``, with its auth applied."""
    timeout = httpx2.Timeout(config.connect_timeout_s, read=max(config.call_timeout_s, 30.0))
    auth = config.auth
    if isinstance(auth, BearerAuth):
        headers = {"Authorization": f"Bearer {auth.token.get_secret_value()}"}
        return httpx2.AsyncClient(headers=headers, timeout=timeout)
    if isinstance(auth, OAuthClientCredentials):
        return httpx2.AsyncClient(
            auth=ClientCredentialsAuth(
                auth, server_url=config.url or "", timeout_s=config.connect_timeout_s
            ),
            timeout=timeout,
        )
    return httpx2.AsyncClient(timeout=timeout)
