"""Where to get an access token for an MCP server: OAuth metadata discovery (MCP auth spec).

1. Ask the MCP server without a token: its 401 names its protected-resource metadata
   (``WWW-Authenticate: Bearer resource_metadata="..."``, RFC 9728).
2. Read that document (else ``/.well-known/oauth-protected-resource[/path]``): it lists the
   authorization servers.
3. Read the authorization server's metadata (``/.well-known/oauth-authorization-server``,
   path-aware, then OpenID configuration; RFC 8414): it names the ``token_endpoint``.

A server publishing no protected-resource metadata is treated as its own authorization server
(the 2025-03-26 rule). With ``issuer`` configured, only that authorization server is accepted,
so the client secret never goes where the MCP server points by itself. The candidate URLs and
the metadata models are the mcp SDK's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypeVar

import httpx2
import pydantic
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

from campaigns.basics import GlyphoxaError

__all__ = ["TokenEndpoint", "discover_token_endpoint"]

log = logging.getLogger(__name__)

_Model = TypeVar("_Model", bound=pydantic.BaseModel)


@dataclass(frozen=True, slots=True)
class TokenEndpoint:
    """What discovery found: where to post the grant, for which issuer and resource."""

    url: str
    issuer: str
    resource: str | None = None
    """The resource indicator (RFC 8707) the token request names, from the server's metadata."""


async def discover_token_endpoint(
    client: httpx2.AsyncClient, server_url: str, *, issuer: str | None = None
) -> TokenEndpoint:
    """The token endpoint for ``server_url``; GlyphoxaError says which step found nothing."""
    challenge = await _challenge(client, server_url)
    resource = await _protected_resource(client, challenge, server_url)
    servers = [str(s) for s in resource.authorization_servers] if resource is not None else []
    if issuer is not None and servers and not any(issuers_match(s, issuer) for s in servers):
        raise GlyphoxaError(
            f"{server_url} names authorization servers {servers}, not the configured "
            f"issuer {issuer}"
        )
    chosen = next((s for s in servers if issuer is None or issuers_match(s, issuer)), None)
    metadata = await _authorization_server(client, chosen or issuer, server_url)
    if issuer is not None and not issuers_match(str(metadata.issuer), issuer):
        raise GlyphoxaError(f"authorization server metadata is for {metadata.issuer}, not {issuer}")
    grants = metadata.grant_types_supported
    if grants is not None and "client_credentials" not in grants:
        raise GlyphoxaError(
            f"authorization server {metadata.issuer} does not offer client_credentials "
            f"(it offers {', '.join(grants)})"
        )
    resource_id = str(resource.resource) if resource is not None else None
    log.info("OAuth discovery for %s: token endpoint %s", server_url, metadata.token_endpoint)
    return TokenEndpoint(str(metadata.token_endpoint), str(metadata.issuer), resource_id)


async def _challenge(client: httpx2.AsyncClient, server_url: str) -> str | None:
    """The ``resource_metadata`` URL of the server's 401, if it sends one."""
    try:
        async with client.stream(
            "GET", server_url, headers={"Accept": "text/event-stream"}
        ) as response:
            if response.status_code == 401:
                return extract_resource_metadata_from_www_auth(response)
    except httpx2.HTTPError as error:
        raise GlyphoxaError(f"MCP server {server_url} unreachable: {error}") from None
    return None


async def _protected_resource(
    client: httpx2.AsyncClient, challenge: str | None, server_url: str
) -> ProtectedResourceMetadata | None:
    for url in build_protected_resource_metadata_discovery_urls(challenge, server_url):
        document = await _get_json(client, url, ProtectedResourceMetadata)
        if document is not None:
            return document
    log.info("%s publishes no protected-resource metadata; trying its own origin", server_url)
    return None


async def _authorization_server(
    client: httpx2.AsyncClient, server: str | None, server_url: str
) -> OAuthMetadata:
    urls = build_oauth_authorization_server_metadata_discovery_urls(server, server_url)
    for url in urls:
        metadata = await _get_json(client, url, OAuthMetadata)
        if metadata is not None:
            return metadata
    raise GlyphoxaError(
        f"no OAuth authorization server metadata found for {server_url} (tried {', '.join(urls)}); "
        "set token_url"
    )


async def _get_json(client: httpx2.AsyncClient, url: str, model: type[_Model]) -> _Model | None:
    try:
        response = await client.get(url, headers={"Accept": "application/json"})
    except httpx2.HTTPError as error:
        log.debug("OAuth discovery: %s unreachable: %s", url, error)
        return None
    if response.status_code != 200:
        return None
    try:
        return model.model_validate_json(response.content)
    except pydantic.ValidationError as error:
        log.warning("OAuth discovery: %s is not valid %s: %s", url, model.__name__, error)
        return None
