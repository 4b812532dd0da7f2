"""Config of MCP servers and built-in tools (``mcp`` and ``tools`` in glyphoxa.yaml)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = [
    "BearerAuth",
    "BuiltinToolsConfig",
    "McpConfig",
    "McpServerConfig",
    "OAuthClientCredentials",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class BearerAuth(_Strict):
    """A static bearer token sent as ``Authorization: Bearer ...``."""

    type: Literal["bearer"]
    token: SecretStr


class OAuthClientCredentials(_Strict):
    """OAuth 2.1 client-credentials grant: the host fetches and refreshes the access token."""

    type: Literal["oauth_client_credentials"]
    token_url: str | None = None
    """Token endpoint; empty: discovered from the server's OAuth metadata (protected-resource
    metadata, then the authorization server's ``.well-known`` metadata)."""
    issuer: str | None = None
    """The authorization server the credentials belong to; discovery accepts no other."""
    client_id: str
    client_secret: SecretStr
    scope: str | None = None


McpAuth = Annotated[BearerAuth | OAuthClientCredentials, Field(discriminator="type")]


class McpServerConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")
    transport: Literal["stdio", "streamable-http"]
    command: list[str] | str | None = None
    """stdio: the program and its arguments, as a list or one shell-like string."""
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    """streamable-http: the endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    auth: McpAuth | None = None
    enabled: bool = True
    connect_timeout_s: float = Field(default=10.0, gt=0)
    call_timeout_s: float = Field(default=4.0, gt=0)
    """Hard timeout for a tool that declares no ``max_duration_ms``."""
    expose_as: dict[str, str] = Field(default_factory=dict)
    """Rename a server's tool for the LLM: ``{original_name: exposed_name}``. Names are fixed
    for the session; list a tool here to fix its name from the very first session too."""
    cacheable_seconds: dict[str, float] = Field(default_factory=dict)
    """Cache results of this server's idempotent, read-only tools (``idempotentHint`` and
    ``readOnlyHint``) for so many seconds: ``{tool_name: seconds}``, ``"*"`` for all."""
    probe: bool = False
    """Run synthetic calibration probes at connect time (only idempotent/read-only tools)."""


class McpConfig(_Strict):
    servers: list[McpServerConfig] = Field(default_factory=list)


class BuiltinToolsConfig(_Strict):
    """Settings of the built-in tool servers."""

    sandbox_dir: str = ".glyphoxa/files"
    srd_path: str | None = None
    """Folder of the SRD 5.1 JSON dataset (5e-database format) to import for rules lookup."""
    web_search_backend: Literal["searxng", "brave"] = "searxng"
    web_search_url: str | None = None
    web_search_api_key: SecretStr | None = None
    fetch_allow_hosts: list[str] = Field(default_factory=list)
    """Hosts ``fetch_page`` may reach even though they resolve to private/loopback addresses."""
    image_output_dir: str = ".glyphoxa/images"
    calibration_path: str = ".glyphoxa/calibration.json"
