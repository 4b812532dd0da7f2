"""Safe page fetching for ``fetch_page``: SSRF checks, size/time caps, HTML to readable text.

Only http(s). Every address a host resolves to must be public unless the host is allow-listed;
redirects are followed by hand (at most 5) and each hop is checked again. The check is repeated
where the socket is opened (``GuardedTransport``): the connection goes to the very address that
was checked, so DNS rebinding between check and connect cannot reach a private address, and
environment proxies are ignored because they would connect on our behalf.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from tools.spec import ToolError

__all__ = [
    "MAX_PAGE_BYTES",
    "MAX_TEXT_CHARS",
    "GuardedTransport",
    "check_url",
    "fetch_readable",
    "html_to_text",
]

log = logging.getLogger(__name__)

MAX_PAGE_BYTES = 2 * 1024 * 1024
MAX_TEXT_CHARS = 20_000
MAX_REDIRECTS = 5

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "head", "canvas"})
_BLOCK = frozenset(
    """p div br li h1 h2 h3 h4 h5 h6 tr section article header footer pre blockquote ul ol
    table nav aside main dt dd hr figure figcaption form""".split()
)


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n- " if tag == "li" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document, scripts and styles removed."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (
        re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n")
    )
    text = "\n".join(line for line in lines if line and line != "-")
    return re.sub(r"\s+", " ", parser.title).strip(), text


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


async def _public_addresses(host: str, port: int) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise ToolError(f"cannot resolve host {host!r}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses or any(_blocked(a) for a in addresses):
        raise ToolError(
            f"refusing to fetch {host!r}: it resolves to a private, loopback or link-local address"
        )
    return addresses


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections only to checked public addresses (or allow-listed hosts)."""

    def __init__(self, allow_hosts: Iterable[str]) -> None:
        self._allow = {h.lower() for h in allow_hosts}
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        target = host
        if host.lower().strip("[]") not in self._allow:
            target = (await _public_addresses(host.strip("[]"), port))[0]
        return await self._inner.connect_tcp(
            target,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise ToolError("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every connection passes the SSRF check at connect time."""

    def __init__(self, allow_hosts: Iterable[str]) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            network_backend=_GuardedBackend(allow_hosts),
        )


async def check_url(url: str, allow_hosts: Iterable[str]) -> None:
    """Refuse non-http(s) URLs and hosts resolving to private/loopback/link-local addresses."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ToolError(f"only http and https pages can be fetched, not {parts.scheme or 'that'!r}")
    host = (parts.hostname or "").lower()
    if not host:
        raise ToolError(f"{url!r} has no host name")
    if parts.username or parts.password:
        raise ToolError("URLs with credentials are not fetched")
    if host in {h.lower() for h in allow_hosts}:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ToolError(f"{url!r} has an invalid port") from None
    await _public_addresses(host, port)


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_PAGE_BYTES:
            return b"".join(chunks)[:MAX_PAGE_BYTES], True
    return b"".join(chunks), False


async def fetch_readable(
    client: httpx.AsyncClient, url: str, allow_hosts: Iterable[str], timeout_s: float
) -> dict[str, Any]:
    """Fetch ``url`` (following checked redirects) and return its title and readable text."""
    allow = list(allow_hosts)
    try:
        async with asyncio.timeout(timeout_s):
            current = url
            for _ in range(MAX_REDIRECTS + 1):
                await check_url(current, allow)
                async with client.stream("GET", current, follow_redirects=False) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise ToolError(f"{current} answered HTTP {response.status_code}")
                    body, cut = await _read_capped(response)
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    encoding = response.encoding or "utf-8"
                    break
            else:
                raise ToolError(f"too many redirects fetching {url}")
    except TimeoutError:
        raise ToolError(f"fetching {url} took longer than {timeout_s:g} s") from None
    except httpx.HTTPError as error:
        raise ToolError(f"cannot fetch {url}: {type(error).__name__}") from None
    if kind and not (
        kind.startswith("text/") or kind in ("application/json", "application/xhtml+xml")
    ):
        raise ToolError(f"{current} is not a text page (content type {kind})")
    text = body.decode(encoding, errors="replace")
    title = ""
    if kind in ("text/html", "application/xhtml+xml") or (
        not kind and "<html" in text[:500].lower()
    ):
        title, text = html_to_text(text)
    truncated = cut or len(text) > MAX_TEXT_CHARS
    result: dict[str, Any] = {"url": current, "title": title, "text": text[:MAX_TEXT_CHARS]}
    if truncated:
        result["truncated"] = True
    return result
