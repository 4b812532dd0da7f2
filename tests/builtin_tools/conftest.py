"""Fixtures for the built-in tool tests: real MCP stdio sessions, real local HTTP servers
(OpenAI images API, SearXNG, Brave) and a real SQLite memory store."""

from __future__ import annotations

import base64
import os
import struct
import sys
import wave
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
#: The SRD 5.1 dataset (CC-BY-4.0) is never copied into the repository: it is read from the
#: workplace's shared folder beside the checkout, or from GLYPHOXA_SRD_DATA.
SRD_PATH = Path(
    os.environ.get("GLYPHOXA_SRD_DATA") or (REPO / ".." / "shared" / "data" / "srd5.1")
).resolve()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "builtin_tools" in str(item.fspath):
            item.add_marker(pytest.mark.timeout(60))


@asynccontextmanager
async def stdio_session(
    module: str, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A real MCP client session with ``python -m <module> <args>`` over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", module, *args], cwd=str(cwd or REPO), env=env
    )
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], read_timeout_seconds=30) as session:
            await session.initialize()
            yield session


def result_text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def tiny_png() -> bytes:
    """A valid 1x1 PNG built by hand (no image library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def write_wav(path: Path, seconds: float = 0.2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(b"\x10\x00" * int(16000 * seconds))


@pytest.fixture
def campaign_dir(tmp_path: Path) -> Path:
    """A small campaign folder with one ranged and one weighted table and two ambience moods."""
    root = tmp_path / "campaign"
    (root / "tables").mkdir(parents=True)
    (root / "tables" / "tavern_rumours.yaml").write_text(
        "name: tavern_rumours\n"
        "description: What the regulars whisper\n"
        "dice: d6\n"
        "entries:\n"
        "  - {range: '1-3', text: 'The mayor owes the thieves guild money.'}\n"
        "  - {range: '4-6', text: 'A dragon was seen over the old mill.'}\n",
        encoding="utf-8",
    )
    (root / "tables" / "only_one.yaml").write_text(
        "name: only_one\nentries:\n  - {text: 'always this', weight: 2}\n", encoding="utf-8"
    )
    write_wav(root / "ambience" / "tavern" / "lute.wav")
    write_wav(root / "ambience" / "battle" / "drums.wav")
    (root / "ambience" / "empty").mkdir()
    return root


@dataclass
class FakeOpenAIImages:
    """State of the local server speaking the OpenAI images API."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_status: int | None = None


@pytest.fixture
async def images_api() -> AsyncIterator[FakeOpenAIImages]:
    state = FakeOpenAIImages()
    png = base64.b64encode(tiny_png()).decode()

    async def generations(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append({"body": body, "auth": request.headers.get("Authorization")})
        if state.fail_status is not None:
            return web.json_response(
                {"error": {"message": "nope", "type": "invalid_request_error"}},
                status=state.fail_status,
            )
        return web.json_response(
            {"created": 1, "data": [{"b64_json": png, "revised_prompt": body["prompt"]}]}
        )

    app = web.Application()
    app.router.add_post("/v1/images/generations", generations)
    async with _serve(app) as url:
        state.url = url
        yield state


@dataclass
class WebSite:
    url: str = ""
    port: int = 0
    searches: list[dict[str, Any]] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)
    """Every path requested, to prove a refused fetch never connected."""


@pytest.fixture
async def website() -> AsyncIterator[WebSite]:
    """A local site: SearXNG and Brave search APIs plus pages for fetch_page."""
    state = WebSite()

    async def searxng(request: web.Request) -> web.Response:
        state.searches.append(dict(request.query))
        if request.query.get("format") != "json":
            return web.Response(status=403, text="format not allowed")
        return web.json_response(
            {
                "query": request.query["q"],
                "results": [
                    {
                        "title": "Owlbear - Wiki",
                        "url": "https://example.org/owlbear",
                        "content": "A bear with an owl's head.",
                    },
                    {
                        "title": "Owlbear lore",
                        "url": "https://example.org/lore",
                        "content": "Origins.",
                    },
                ],
            }
        )

    async def brave(request: web.Request) -> web.Response:
        state.searches.append(dict(request.query))
        if request.headers.get("X-Subscription-Token") != "brave-key":
            return web.json_response({"error": "bad token"}, status=401)
        return web.json_response(
            {
                "web": {
                    "results": [
                        {
                            "title": "Brave hit",
                            "url": "https://example.com/x",
                            "description": "desc",
                        }
                    ]
                }
            }
        )

    async def page(request: web.Request) -> web.Response:
        html = (
            "<html><head><title>The Owlbear</title><style>p{color:red}</style>"
            "<script>alert('x')</script></head><body><h1>Owlbear</h1>"
            "<p>Owlbears are <b>fierce</b> &amp; territorial.</p><ul><li>Claws</li>"
            "<li>Beak</li></ul></body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    async def redirect_inside(request: web.Request) -> web.Response:
        raise web.HTTPFound("/page")

    async def redirect_private(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://169.254.169.254/latest/meta-data/")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="x" * (3 * 1024 * 1024), content_type="text/plain")

    async def binary(request: web.Request) -> web.Response:
        return web.Response(body=tiny_png(), content_type="image/png")

    async def slow(request: web.Request) -> web.Response:
        import asyncio

        await asyncio.sleep(5)
        return web.Response(text="late")

    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        state.hits.append(request.path)
        return await handler(request)

    app = web.Application(middlewares=[record])
    app.router.add_get("/search", searxng)
    app.router.add_get("/res/v1/web/search", brave)
    app.router.add_get("/page", page)
    app.router.add_get("/redirect-inside", redirect_inside)
    app.router.add_get("/redirect-private", redirect_private)
    app.router.add_get("/big", big)
    app.router.add_get("/binary", binary)
    app.router.add_get("/slow", slow)
    async with _serve(app) as url:
        state.url = url
        state.port = int(url.rsplit(":", 1)[1])
        yield state


@asynccontextmanager
async def _serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
