"""web_search (SearXNG and Brave wire formats) and fetch_page (SSRF guard, caps, HTML text)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from tools.builtin.web import create_server
from tools.builtin.web_fetch import GuardedTransport, fetch_readable, html_to_text
from tools.config import BuiltinToolsConfig
from tools.settings import BuiltinSettings
from tools.spec import BuiltinServer, ToolContext, ToolError

from .conftest import WebSite, result_text, stdio_session


@pytest.fixture
async def make_tools() -> AsyncIterator[Callable[..., dict]]:
    """Build web servers from settings; their HTTP clients are closed after the test."""
    servers: list[BuiltinServer] = []

    def build(**settings: object) -> dict:
        config = BuiltinToolsConfig.model_validate(settings)
        server = create_server(ToolContext(settings=BuiltinSettings.from_config(config)))
        servers.append(server)
        return {t.name: t for t in server.tools}

    yield build
    for server in servers:
        assert server.shutdown is not None
        await server.shutdown()


async def test_searxng_search(website: WebSite) -> None:
    config = BuiltinToolsConfig(web_search_url=website.url)
    server = create_server(ToolContext(settings=BuiltinSettings.from_config(config)))
    tools = {t.name: t for t in server.tools}
    try:
        found = await tools["web_search"].handler(query="owlbear", limit=1)
    finally:
        await server.shutdown()
    assert found["backend"] == "searxng"
    assert found["results"] == [
        {
            "title": "Owlbear - Wiki",
            "url": "https://example.org/owlbear",
            "snippet": "A bear with an owl's head.",
        }
    ]
    assert website.searches[-1] == {"q": "owlbear", "format": "json"}


async def test_brave_search_sends_token(website: WebSite, make_tools: Callable[..., dict]) -> None:
    tools = make_tools(
        web_search_backend="brave", web_search_url=website.url, web_search_api_key="brave-key"
    )
    found = await tools["web_search"].handler(query="owlbear")
    assert found["results"][0]["title"] == "Brave hit"
    assert website.searches[-1]["count"] == "5"
    wrong_key = make_tools(
        web_search_backend="brave", web_search_url=website.url, web_search_api_key="x"
    )
    with pytest.raises(ToolError, match="check the API key"):
        await wrong_key["web_search"].handler(query="owlbear")
    with pytest.raises(ToolError, match="not configured"):
        await make_tools()["web_search"].handler(query="owlbear")


async def test_fetch_page_allow_listed_local_site(
    website: WebSite, make_tools: Callable[..., dict]
) -> None:
    tools = make_tools(fetch_allow_hosts=["127.0.0.1"])
    page = await tools["fetch_page"].handler(url=f"{website.url}/redirect-inside")
    assert page["title"] == "The Owlbear"
    assert page["url"].endswith("/page")
    assert "Owlbears are fierce & territorial." in page["text"]
    assert "- Claws" in page["text"] and "alert" not in page["text"] and "color" not in page["text"]
    big = await tools["fetch_page"].handler(url=f"{website.url}/big")
    assert big["truncated"] is True and len(big["text"]) == 20_000
    with pytest.raises(ToolError, match="not a text page"):
        await tools["fetch_page"].handler(url=f"{website.url}/binary")
    with pytest.raises(ToolError, match="HTTP 404"):
        await tools["fetch_page"].handler(url=f"{website.url}/missing")


async def test_fetch_page_time_cap(website: WebSite) -> None:
    """The cap ``fetch_page`` puts under its declared 4 s maximum, here shortened to 0.3 s."""
    async with httpx.AsyncClient(transport=GuardedTransport(["127.0.0.1"])) as client:
        with pytest.raises(ToolError, match=r"took longer than 0\.3 s"):
            await fetch_readable(client, f"{website.url}/slow", ["127.0.0.1"], 0.3)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:{port}/page", "private, loopback or link-local"),
        ("http://localhost:{port}/page", "private, loopback or link-local"),
        ("http://[::1]:{port}/page", "private, loopback or link-local"),
        ("http://10.1.2.3/", "private, loopback or link-local"),
        ("http://192.168.0.1/admin", "private, loopback or link-local"),
        ("http://169.254.169.254/latest/meta-data/", "private, loopback or link-local"),
        ("http://[::ffff:127.0.0.1]:{port}/", "private, loopback or link-local"),
        ("http://0.0.0.0:{port}/", "private, loopback or link-local"),
        ("http://2130706433/", "private, loopback or link-local"),
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.org/file", "only http and https"),
        ("http://user:pw@example.org/", "credentials"),
    ],
)
async def test_ssrf_refused(
    website: WebSite, url: str, message: str, make_tools: Callable[..., dict]
) -> None:
    tools = make_tools()
    with pytest.raises(ToolError, match=message):
        await tools["fetch_page"].handler(url=url.format(port=website.port))
    assert website.hits == []


async def test_redirect_to_private_address_refused(
    website: WebSite, make_tools: Callable[..., dict]
) -> None:
    tools = make_tools(fetch_allow_hosts=["127.0.0.1"])
    with pytest.raises(ToolError, match="private, loopback or link-local"):
        await tools["fetch_page"].handler(url=f"{website.url}/redirect-private")
    assert website.hits == ["/redirect-private"]


def test_html_to_text_keeps_structure() -> None:
    title, text = html_to_text(
        "<title> A  page </title><div>One<br>Two</div><noscript>no</noscript><p>Three</p>"
    )
    assert title == "A page" and text.split("\n") == ["One", "Two", "Three"]


async def test_over_stdio(website: WebSite) -> None:
    args = ["--set", f"web_search_url={website.url}", "--set", "fetch_allow_hosts=127.0.0.1"]
    async with stdio_session("tools.builtin", "web", *args) as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("web_search", "fetch_page"):
            meta = listing[name].meta["io.glyphoxa/latency"]
            assert meta["estimated_duration_ms"] > 1500 and meta["max_duration_ms"] <= 4000
        found = await session.call_tool("web_search", {"query": "owlbear"})
        assert json.loads(result_text(found))["results"][0]["url"] == "https://example.org/owlbear"
        page = await session.call_tool("fetch_page", {"url": f"{website.url}/page"})
        assert "fierce" in result_text(page)
        refused = await session.call_tool("fetch_page", {"url": "http://169.254.169.254/"})
        assert refused.is_error and "link-local" in result_text(refused)
        bad = await session.call_tool("fetch_page", {"url": "nope"})
        assert bad.is_error and "url" in result_text(bad)


async def test_connect_time_guard_blocks_what_the_url_check_would_miss(website: WebSite) -> None:
    """The transport re-checks at connect time, so even a request that skipped check_url (as a
    DNS-rebinding answer would) cannot open a connection to a loopback address."""
    async with httpx.AsyncClient(transport=GuardedTransport([])) as guarded:
        with pytest.raises(ToolError, match="private, loopback or link-local"):
            await guarded.get(f"{website.url}/page")
    assert website.hits == []
    async with httpx.AsyncClient(transport=GuardedTransport(["127.0.0.1"])) as allowed:
        response = await allowed.get(f"{website.url}/page")
        assert response.status_code == 200
    assert website.hits == ["/page"]
