"""fetch_page and web_search against hostile servers: compression bombs, pathological HTML and
JSON, lying charsets and slow drips stay within the tools' declared 4 s and 256 MB; tunnelled
private IPv6 is refused.

Every call runs in a child process (``tool_probe.py``) that measures its time and peak memory.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator
from functools import cache

import pytest
from aiohttp import web

from tools.builtin.web_fetch import check_url
from tools.spec import ToolError

from .security_support import probe_tools


@cache
def _gzip_of_zeros(mebibytes: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join(packer.compress(block) for _ in range(mebibytes)) + packer.flush()


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data, 9)


@cache
def _pages() -> dict[str, tuple[dict[str, str], bytes]]:
    """path -> (headers, body as sent)."""
    inner = _gzip_of_zeros(1024)  # 1 GiB of zeros in ~1 MB
    html = {"Content-Type": "text/html; charset=utf-8"}
    return {
        "/gzip-bomb": ({**html, "Content-Encoding": "gzip"}, inner),
        # The reported one: a few KB that the old reader inflated to gigabytes in one chunk.
        "/nested-bomb": ({**html, "Content-Encoding": "gzip, gzip"}, gzip.compress(inner, 9)),
        "/deflate-bomb": (
            {**html, "Content-Encoding": "gzip, deflate"},
            _deflate(inner),
        ),
        "/layers": ({**html, "Content-Encoding": "gzip, gzip, gzip"}, b"x"),
        "/brotli": ({**html, "Content-Encoding": "br"}, b"\x0b\x02\x80hello\x03"),
        "/corrupt": ({**html, "Content-Encoding": "gzip"}, b"\x1f\x8b\x08\x00garbage"),
        # html.parser is quadratic here: 48 KiB took 17 s; 64 KiB would take ~30 s.
        "/quadratic": (html, b"<a " * 22_000),
        "/quadratic-2mib": (html, b"<a " * 700_000),
        "/many-tags": (html, b"<p>" * 700_000),
        "/cdata": (html, b"<![" * 20_000),  # an AssertionError inside html.parser
        "/unclosed-comment": (html, b"<p>text</p><!--" + b"x" * 2_000_000),
        "/evil/search": (
            {"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"},
            gzip.compress(inner, 9),
        ),
        "/deep/search": ({"Content-Type": "application/json"}, b"[" * 200_000),
        "/rot13": ({"Content-Type": "text/html; charset=rot13"}, b"<p>uryyb</p>"),
        "/base64": ({"Content-Type": "text/plain; charset=base64"}, b"aGVsbG8="),
    }


@pytest.fixture(scope="module")
async def hostile_site() -> AsyncIterator[str]:
    pages = await asyncio.to_thread(_pages)

    async def serve(request: web.Request) -> web.StreamResponse:
        if request.path == "/drip":  # one byte every 100 ms, forever
            response = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await response.prepare(request)
            while True:
                await response.write(b"x")
                await asyncio.sleep(0.1)
        headers, body = pages[request.path]
        return web.Response(body=body, headers=headers)

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _spec(base: str, paths: list[str]) -> dict[str, object]:
    return {
        "server": "web",
        "settings": {"fetch_allow_hosts": ["127.0.0.1"]},
        "calls": [
            {"tool": "fetch_page", "label": path, "args": {"url": base + path}} for path in paths
        ],
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "paths",
    [
        ["/nested-bomb"],
        ["/gzip-bomb", "/deflate-bomb", "/layers", "/brotli", "/corrupt"],
        ["/quadratic"],
        ["/quadratic-2mib", "/many-tags", "/unclosed-comment", "/drip"],
        ["/cdata"],
        ["/rot13", "/base64"],
    ],
)
async def test_hostile_pages_stay_within_time_and_memory(
    hostile_site: str, paths: list[str]
) -> None:
    probe = await asyncio.to_thread(probe_tools, _spec(hostile_site, paths))
    assert [c.label for c in probe.calls] == paths
    probe.assert_within_limits()
    outcomes = {c.label: c for c in probe.calls}
    for bomb in ("/nested-bomb", "/gzip-bomb", "/deflate-bomb"):
        if bomb in outcomes:  # zeros become an empty page, cut at the cap
            assert outcomes[bomb].outcome == "ok" and '"truncated": true' in outcomes[bomb].detail
    if "/rot13" in outcomes:
        assert outcomes["/rot13"].outcome == "ok" and "uryyb" in outcomes["/rot13"].detail
    for refused in ("/layers", "/brotli", "/corrupt", "/drip"):
        if refused in outcomes:
            assert outcomes[refused].outcome == "tool_error", outcomes[refused]


@pytest.mark.slow
async def test_a_hostile_search_backend_stays_within_limits(hostile_site: str) -> None:
    calls = [
        {"tool": "web_search", "label": "bomb", "args": {"query": "owlbear"}},
    ]
    for base in ("/evil", "/deep"):
        spec = {
            "server": "web",
            "settings": {"web_search_url": hostile_site + base},
            "calls": calls,
        }
        probe = await asyncio.to_thread(probe_tools, spec)
        probe.assert_within_limits()
        assert probe.calls[0].outcome == "tool_error", probe.calls[0]


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 wrapping the cloud metadata address
        "fec0::1",  # site-local
        "2001:0:7f00:1::1",  # Teredo
        "64:ff9b::a9fe:a9fe",  # NAT64 to 169.254.169.254
    ],
)
async def test_tunnelled_and_site_local_ipv6_are_private(address: str) -> None:
    with pytest.raises(ToolError, match="private, loopback or link-local"):
        await check_url(f"http://[{address}]/latest/meta-data/", [])
