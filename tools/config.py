"""Config of MCP servers and built-in tools (``mcp`` and ``tools`` in glyphoxa.yaml)."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = [
    "BearerAuth",
    "BuiltinToolsConfig",
    "McpConfig",
    "McpServerConfig",
    "OAuthClientCredentials",
]


#: ``image_size``: what the OpenAI images API takes.
_IMAGE_SIZE = re.compile(r"auto|[1-9][0-9]{1,4}x[1-9][0-9]{1,4}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class BearerAuth(_Strict):
    """A static bearer token sent as ``Authorization: Bearer ...``."""

    type: Literal["bearer"]
    token: SecretStr
    """The token; write ``${VAR}`` and keep the value in the environment."""


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
    """Write ``${VAR}`` and keep the value in the environment."""
    scope: str | None = None
    """The scopes to ask for, space-separated; empty: the server's default."""


McpAuth = Annotated[BearerAuth | OAuthClientCredentials, Field(discriminator="type")]


class McpServerConfig(_Strict):
    """One external MCP tool server."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")
    """How NPC files name it: ``<name>.*`` and ``<name>__<tool>``."""
    transport: Literal["stdio", "streamable-http"]
    """``stdio``: Glyphoxa starts ``command`` and talks over its stdin/stdout;
    ``streamable-http``: a server at ``url``."""
    command: list[str] | str | None = None
    """stdio: the program and its arguments, as a list or one shell-like string."""
    env: dict[str, str] = Field(default_factory=dict)
    """stdio: extra environment variables for the program."""
    cwd: str | None = None
    """stdio: the program's working folder; empty: the bot's."""
    url: str | None = None
    """streamable-http: the endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    auth: McpAuth | None = None
    """streamable-http: a bearer token or OAuth client credentials; empty: none."""
    enabled: bool = True
    """false keeps the entry without connecting to it."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """How long a connection attempt may take before it counts as failed."""
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
    """External MCP tool servers; their tools join the built-ins."""

    servers: list[McpServerConfig] = Field(default_factory=list)


def _bare_host(host: str) -> str:
    """A host ``fetch_page`` compares with a URL's host: anything else would never match."""
    text = host.strip().lower()
    if not text or any(mark in text for mark in ("/", "@", "[", "]", " ")):
        raise ValueError("not a bare host name or IP address; write e.g. wiki.lan")
    if ":" in text:  # only an IPv6 address may hold a colon; ``host:port`` never matches
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError("not a bare host name or IP address; leave the port out") from None
    return text


# The one source of the built-in tools' values and defaults: ``tools.settings.BuiltinSettings``
# turns them into each tool's typed settings. A value no tool could use is refused here, where
# the loader can name its file and line, not inside a tool in the middle of a session.
class BuiltinToolsConfig(_Strict):
    """Settings of the built-in tool servers. A value no tool could use (a URL that is not
    http(s), a size that is not WIDTHxHEIGHT, a host with a port) is refused when glyphoxa.yaml
    is loaded."""

    sandbox_dir: str = ".glyphoxa/files"
    """The folder ``read_file``, ``write_file`` and ``list_files`` stay inside."""
    srd_path: str | None = None
    """Folder of the SRD 5.1 JSON dataset (5e-database format) to import for rules lookup."""
    rules_db: str = ".glyphoxa/rules.db"
    """The rules index ``search_rules`` and ``get_rule`` read; ``glyphoxa rules import`` writes
    it there."""
    web_search_backend: Literal["searxng", "brave"] = "searxng"
    """What ``web_search`` asks: a SearXNG instance or the Brave Search API."""
    web_search_url: str | None = None
    """SearXNG: its URL (with the JSON format enabled); empty: web search is unavailable.
    Brave: empty means Brave's own endpoint."""
    web_search_api_key: SecretStr | None = None
    """Brave: the API key; write ``${BRAVE_API_KEY}``."""
    fetch_allow_hosts: list[Annotated[str, AfterValidator(_bare_host)]] = Field(
        default_factory=list
    )
    """Hosts ``fetch_page`` may reach even though they resolve to private/loopback addresses:
    bare host names or IP addresses, e.g. ``wiki.lan`` or ``192.168.1.20``."""
    image_base_url: str | None = None
    """An OpenAI-compatible images endpoint for ``generate_image``, e.g.
    ``http://127.0.0.1:8080/v1``; empty: OpenAI's."""
    image_api_key: SecretStr | None = None
    """The images endpoint's key; write ``${IMAGE_API_KEY}``. Empty: ``OPENAI_API_KEY`` from the
    environment, else image generation is unavailable."""
    image_model: str = Field(default="gpt-image-1", min_length=1)
    """The image model, e.g. ``gpt-image-1`` or ``dall-e-3``."""
    image_size: str = "1024x1024"
    """The picture's size as WIDTHxHEIGHT (``1024x1024``, ``1536x1024``) or ``auto``; which sizes
    a model draws is up to the service."""
    image_output_dir: str = ".glyphoxa/images"
    """Where ``generate_image`` saves its pictures."""
    calibration_path: str = ".glyphoxa/calibration.json"
    """Where each tool's measured latency is kept between sessions."""

    @field_validator("web_search_url", "image_base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        """A service URL a tool can reach; a bad one would fail on the first call, mid-session."""
        if url is None or not url.strip():  # empty: the service is not configured
            return None
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http(s) URL; write e.g. http://127.0.0.1:8080")
        return url.strip()

    @field_validator("image_size")
    @classmethod
    def _size(cls, size: str) -> str:
        if not _IMAGE_SIZE.fullmatch(size):
            raise ValueError("not WIDTHxHEIGHT (e.g. 1024x1024) or auto")
        return size
