"""The ``web`` server: ``web_search(query)`` and ``fetch_page(url)``.

Search goes to a SearXNG instance (``/search?format=json``) or the Brave Search API
(``/res/v1/web/search`` with ``X-Subscription-Token``), chosen by ``tools.web_search_backend``.
Fetching is guarded against SSRF (see ``web_fetch``). Both leave the machine, so DEEP only.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from tools.builtin._common import deep, define_tool, object_schema
from tools.builtin.web_fetch import ACCEPT_ENCODING, GuardedTransport, fetch_readable, read_capped
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["BRAVE_DEFAULT_URL", "create_server"]

log = logging.getLogger(__name__)

BRAVE_DEFAULT_URL = "https://api.search.brave.com"
_USER_AGENT = "Glyphoxa/0.1 (tabletop NPC assistant)"
#: Both tools declare a 4 s maximum, after which the host abandons the call: a request gets a
#: little less, so a slow site ends as a clear "timed out" rather than an abandoned call.
_REQUEST_TIMEOUT_S = 3.5


def _results_searxng(data: Any) -> list[dict[str, str]]:
    rows = data.get("results", []) if isinstance(data, dict) else []
    return _results(rows, snippet="content")


def _results_brave(data: Any) -> list[dict[str, str]]:
    web = data.get("web", {}) if isinstance(data, dict) else {}
    rows = web.get("results", []) if isinstance(web, dict) else []
    return _results(rows, snippet="description")


def _results(rows: Any, *, snippet: str) -> list[dict[str, str]]:
    """A backend's result rows as title/url/snippet; rows without a URL are dropped."""
    return [
        {
            "title": str(r.get("title", "")),
            "url": str(r.get("url", "")),
            "snippet": str(r.get(snippet, "")),
        }
        for r in rows
        if isinstance(r, dict) and r.get("url")
    ]


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Web search and page fetching through one shared HTTP client."""
    settings = ctx.settings.web
    state: dict[str, httpx.AsyncClient] = {}
    timeout = httpx.Timeout(_REQUEST_TIMEOUT_S)

    def client() -> httpx.AsyncClient:
        """For the configured search backend (which may well be a local SearXNG)."""
        if "search" not in state:
            state["search"] = httpx.AsyncClient(
                headers={"User-Agent": _USER_AGENT}, timeout=timeout
            )
        return state["search"]

    def fetch_client() -> httpx.AsyncClient:
        """For arbitrary URLs: every connection is SSRF-checked where it is opened."""
        if "fetch" not in state:
            state["fetch"] = httpx.AsyncClient(
                headers={"User-Agent": _USER_AGENT},
                timeout=timeout,
                transport=GuardedTransport(settings.allow_hosts),
                trust_env=False,
            )
        return state["fetch"]

    async def shutdown() -> None:
        for key in ("search", "fetch"):
            current = state.pop(key, None)
            if current is not None:
                await current.aclose()

    async def search_json(url: str, params: dict[str, Any], headers: dict[str, str]) -> Any:
        """GET a search API's JSON, read within the same byte caps as fetched pages."""
        try:
            async with client().stream(
                "GET", url, params=params, headers={**headers, "Accept-Encoding": ACCEPT_ENCODING}
            ) as response:
                if response.status_code in (401, 403):
                    raise ToolError(
                        f"web search refused the request (HTTP {response.status_code}); "
                        "check the API key"
                    )
                if response.status_code >= 400:
                    raise ToolError(f"web search failed with HTTP {response.status_code}")
                body, cut = await read_capped(response)
        except httpx.HTTPError as error:
            raise ToolError(f"web search failed: {type(error).__name__}") from None
        if cut:
            raise ToolError("web search answered with more than 2 MiB; refusing it")
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise ToolError("web search answered with something that is not JSON") from None

    async def web_search(query: str, limit: int = 5) -> dict[str, Any]:
        backend, base, key = settings.backend, settings.search_url, settings.api_key
        if backend == "searxng":
            if not base:
                raise ToolError("web search is not configured (tools.web_search_url)")
            data = await search_json(
                f"{base.rstrip('/')}/search", {"q": query, "format": "json"}, {}
            )
        else:  # brave: the config admits no third backend
            if key is None or not key.get_secret_value():
                raise ToolError("Brave search needs tools.web_search_api_key")
            data = await search_json(
                f"{(base or BRAVE_DEFAULT_URL).rstrip('/')}/res/v1/web/search",
                {"q": query, "count": limit},
                {"X-Subscription-Token": key.get_secret_value(), "Accept": "application/json"},
            )
        results = (_results_searxng if backend == "searxng" else _results_brave)(data)
        return {"query": query, "backend": backend, "results": results[:limit]}

    async def fetch_page(url: str) -> dict[str, Any]:
        return await fetch_readable(fetch_client(), url, settings.allow_hosts, _REQUEST_TIMEOUT_S)

    return BuiltinServer(
        name="web",
        shutdown=shutdown,
        tools=[
            define_tool(
                "web_search",
                "Search the web; returns titles, URLs and snippets. Slow, so only for deep "
                "questions about the real world.",
                object_schema(
                    {
                        "query": {"type": "string", "minLength": 1, "maxLength": 300},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                    },
                    ["query"],
                ),
                web_search,
                deep(
                    estimated=2000,
                    maximum=4000,
                    read_only=True,
                    idempotent=True,
                    cacheable_seconds=600,
                ),
            ),
            define_tool(
                "fetch_page",
                "Fetch a public web page (http or https) and return its readable text.",
                object_schema(
                    {"url": {"type": "string", "minLength": 8, "maxLength": 2000}}, ["url"]
                ),
                fetch_page,
                deep(
                    estimated=2500,
                    maximum=4000,
                    read_only=True,
                    idempotent=True,
                    cacheable_seconds=600,
                ),
            ),
        ],
    )
