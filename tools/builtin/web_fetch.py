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
import socket
import time
import zlib
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from tools.builtin.html_text import html_to_text
from tools.spec import ToolError

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_PAGE_BYTES",
    "MAX_TEXT_CHARS",
    "GuardedTransport",
    "check_url",
    "fetch_readable",
    "html_to_text",
    "read_capped",
]

log = logging.getLogger(__name__)

MAX_PAGE_BYTES = 2 * 1024 * 1024
"""Most bytes read from the wire, and most bytes a page may decompress to."""
MAX_TEXT_CHARS = 20_000
MAX_REDIRECTS = 5
MAX_ENCODINGS = 2
"""Stacked ``Content-Encoding`` layers accepted (``gzip, gzip`` is legal, ten are an attack)."""
ACCEPT_ENCODING = "gzip, deflate"
"""What we can decode with a bounded output; anything else sent anyway is refused."""

#: Networks that reach private space through another address family or a relay: 6to4 and
#: Teredo embed an IPv4 address, NAT64 translates to one, site-local is deprecated private.
_TUNNELS = tuple(
    ipaddress.ip_network(n) for n in ("2002::/16", "2001::/32", "64:ff9b::/96", "64:ff9b:1::/48")
)
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_CONTROL = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
"""Control characters (NUL and friends) a page may carry but no reader needs."""


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _SITE_LOCAL or any(ip in net for net in _TUNNELS):
            return True
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


class _BoundedDecoder:
    """Undoes a ``Content-Encoding`` chain as bytes arrive, never producing more than ``limit``
    bytes from any layer: a 2 KB gzip bomb stops at the cap instead of filling memory."""

    def __init__(self, header: str, limit: int) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > MAX_ENCODINGS:
            raise ToolError(f"the page is encoded {len(codings)} times over; refusing it")
        self._layers: list[Any] = []
        for coding in reversed(codings):  # the last encoding applied is undone first
            if coding in ("gzip", "x-gzip"):
                self._layers.append(zlib.decompressobj(16 + zlib.MAX_WBITS))
            elif coding == "deflate":
                self._layers.append(_Deflate())
            else:
                raise ToolError(f"the page uses content encoding {coding!r}, which is not read")
        self._limit = limit
        self._made = [0] * len(self._layers)
        self.cut = False

    def feed(self, data: bytes) -> bytes:
        """Decode one chunk; sets ``cut`` once any layer reached the limit."""
        try:
            for index, layer in enumerate(self._layers):
                room = self._limit + 1 - self._made[index]
                data = layer.decompress(data, room)
                self._made[index] += len(data)
                if self._made[index] > self._limit:
                    self.cut = True
                    return data[: len(data) - (self._made[index] - self._limit)]
        except zlib.error:
            raise ToolError("the page's compressed body is corrupt") from None
        return data

    def finish(self) -> None:
        """At the end of the body: every layer must have seen its stream's end."""
        if not all(layer.eof for layer in self._layers):
            raise ToolError("the page's compressed body is incomplete or corrupt")


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped, or (wrongly but often) raw."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._first = b""

    @property
    def eof(self) -> bool:
        return self._inner is not None and bool(self._inner.eof)

    def decompress(self, data: bytes, room: int) -> bytes:
        if self._inner is None:
            self._first += data
            if len(self._first) < 2:
                return b""
            wrapped = (self._first[0] & 0x0F) == 8 and int.from_bytes(self._first[:2]) % 31 == 0
            self._inner = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._first = self._first, b""
        return self._inner.decompress(data, room)  # type: ignore[no-any-return]


async def read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    """The body, decoded within :data:`MAX_PAGE_BYTES` (raw and decoded), and whether it was
    cut short."""
    decoder = _BoundedDecoder(response.headers.get("content-encoding", ""), MAX_PAGE_BYTES)
    chunks: list[bytes] = []
    raw = size = 0
    async for chunk in response.aiter_raw():
        raw += len(chunk)
        if raw > MAX_PAGE_BYTES:
            chunk = chunk[: len(chunk) - (raw - MAX_PAGE_BYTES)]
        piece = decoder.feed(chunk)
        chunks.append(piece)
        size += len(piece)
        if decoder.cut or raw >= MAX_PAGE_BYTES or size >= MAX_PAGE_BYTES:
            return b"".join(chunks)[:MAX_PAGE_BYTES], True
    decoder.finish()
    return b"".join(chunks), False


def _text_encoding(response: httpx.Response) -> str:
    """The page's declared charset if it is a text codec, else UTF-8 (never ``rot13``)."""
    name = response.charset_encoding or "utf-8"
    try:
        b"-".decode(name, "replace")  # LookupError for unknown and bytes-to-bytes codecs
    except LookupError:
        return "utf-8"
    return name


async def fetch_readable(
    client: httpx.AsyncClient, url: str, allow_hosts: Iterable[str], timeout_s: float
) -> dict[str, Any]:
    """Fetch ``url`` (following checked redirects) and return its title and readable text.

    Everything (connecting, reading, decompressing, extracting text in a worker thread) happens
    within ``timeout_s``; the extraction also watches the clock itself, so the thread stops
    when the call gives up.
    """
    allow = list(allow_hosts)
    deadline = time.monotonic() + timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            current = url
            for _ in range(MAX_REDIRECTS + 1):
                await check_url(current, allow)
                async with client.stream(
                    "GET",
                    current,
                    follow_redirects=False,
                    headers={"Accept-Encoding": ACCEPT_ENCODING},
                ) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise ToolError(f"{current} answered HTTP {response.status_code}")
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if kind and not (
                        kind.startswith("text/")
                        or kind in ("application/json", "application/xhtml+xml")
                    ):
                        raise ToolError(f"{current} is not a text page (content type {kind})")
                    body, cut = await read_capped(response)
                    encoding = _text_encoding(response)
                    break
            else:
                raise ToolError(f"too many redirects fetching {url}")
            text = body.decode(encoding, errors="replace").translate(_CONTROL)
            title = ""
            if kind in ("text/html", "application/xhtml+xml") or (
                not kind and "<html" in text[:500].lower()
            ):
                title, text = await asyncio.to_thread(html_to_text, text, deadline=deadline)
    except TimeoutError:
        raise ToolError(f"fetching {url} took longer than {timeout_s:g} s") from None
    except httpx.HTTPError as error:
        raise ToolError(f"cannot fetch {url}: {type(error).__name__}") from None
    truncated = cut or len(text) > MAX_TEXT_CHARS
    result: dict[str, Any] = {"url": current, "title": title, "text": text[:MAX_TEXT_CHARS]}
    if truncated:
        result["truncated"] = True
    return result
