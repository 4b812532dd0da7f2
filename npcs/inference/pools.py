"""HTTP for inference servers (any OpenAI-compatible endpoint): pooled, bounded per table, retried.

Whisper, the LLM and TTS may run on their own machines (vLLM, llama.cpp server, a Whisper or
Piper server with the OpenAI API). Every table of a process then talks to them through:

- :class:`InferencePool`: one connection pool per endpoint per process (``pool_size``
  connections, kept alive), so a hundred tables do not open a hundred sockets each;
- :class:`TableGate`: one table's door to one endpoint. At most ``per_table`` of that table's
  requests are in flight (the slot is held until the response body is closed, so a streamed
  answer counts for as long as it streams), so one busy table cannot take the whole pool and
  starve the others; a 429 or 5xx answer (or a refused connection) is retried ``retries`` times
  after an exponential, jittered backoff that honours ``Retry-After`` up to ``max_backoff_s``
  (a longer wait is not worth it for a live table: the answer fails at once with the reason);
- a per-request timeout (``timeout_s`` between bytes, ``connect_timeout_s`` to connect).

The official ``openai`` SDK (3.x, on ``httpx2``) sits on top with its own retries turned off,
so each failure is retried exactly once per our policy. Counters for Prometheus live in the
pool's ``registry`` (``glyphoxa_inference_*``).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Protocol

import httpx2
from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import SecretStr

from campaigns.providers.openai_client import openai_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "InferencePool",
    "RemoteOptions",
    "RemoteProvider",
    "RemoteSettings",
    "TableGate",
    "remote_options",
]

log = logging.getLogger(__name__)

#: Answers worth another try: rate limited, or the server (or a proxy before it) failed.
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """How one service (stt, llm, tts) talks to its endpoint; from ``providers.X.options``."""

    timeout_s: float = 30.0
    """Longest wait for the next bytes of an answer (the per-request timeout)."""
    connect_timeout_s: float = 3.0
    retries: int = 2
    """Extra attempts after a 408/429/5xx answer or a failed connection."""
    backoff_s: float = 0.25
    """First retry delay; doubles each time, with up to 25 % jitter."""
    max_backoff_s: float = 2.0
    """Longest delay (and longest ``Retry-After`` honoured); a live table cannot wait longer."""
    per_table: int = 4
    """Requests one table may have in flight to this endpoint."""
    pool_size: int = 100
    """Connections to this endpoint shared by every table of the process."""


#: Defaults per service: transcription and speech are short requests, answers stream longer.
DEFAULTS = {
    "stt": RemoteOptions(timeout_s=15.0, per_table=2),
    "llm": RemoteOptions(timeout_s=60.0, per_table=4),
    "tts": RemoteOptions(timeout_s=15.0, per_table=4),
}


class RemoteSettings(Protocol):
    """What the pools read of ``providers.<service>.options`` (``bot.settings.providers``
    validates them at load): each is None where the service's default applies."""

    @property
    def timeout_s(self) -> float | None: ...

    @property
    def connect_timeout_s(self) -> float | None: ...

    @property
    def retries(self) -> int | None: ...

    @property
    def backoff_s(self) -> float | None: ...

    @property
    def max_backoff_s(self) -> float | None: ...

    @property
    def per_table(self) -> int | None: ...

    @property
    def pool_size(self) -> int | None: ...


class RemoteProvider(Protocol):
    """A ``providers.<service>`` section as the pools read it."""

    @property
    def base_url(self) -> str | None: ...

    @property
    def api_key(self) -> SecretStr | None: ...

    @property
    def options(self) -> RemoteSettings: ...


def remote_options(service: str, options: RemoteSettings) -> RemoteOptions:
    """``providers.<service>.options`` over the service's defaults (:data:`DEFAULTS`)."""
    base = DEFAULTS.get(service, RemoteOptions())
    changes: dict[str, Any] = {}
    for spec in fields(RemoteOptions):
        value = getattr(options, spec.name)
        if value is not None:
            changes[spec.name] = value
    return replace(base, **changes)


class InferencePool:
    """Connection pools per endpoint for the whole process; close it when the process ends."""

    def __init__(self) -> None:
        self._transports: dict[tuple[str, int], httpx2.AsyncHTTPTransport] = {}
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "glyphoxa_inference_requests",
            "Requests to inference endpoints by service and outcome (ok, retried, failed, "
            "error: no answer at all).",
            ["service", "outcome"],
            registry=self.registry,
        )
        self.wait_seconds = Histogram(
            "glyphoxa_inference_slot_wait_seconds",
            "Time a request waited for its table's slot (the per-table limit) before it was sent.",
            ["service"],
            buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0),
            registry=self.registry,
        )
        self.header_seconds = Histogram(
            "glyphoxa_inference_seconds",
            "Time from sending a request to its response headers, per attempt.",
            ["service"],
            buckets=(0.01, 0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 2.0, 5.0, 15.0),
            registry=self.registry,
        )

    def transport(self, base_url: str, pool_size: int) -> httpx2.AsyncHTTPTransport:
        """The pool for ``base_url``'s origin (shared by every table that uses it)."""
        origin = httpx2.URL(base_url)
        key = (f"{origin.scheme}://{origin.netloc.decode('ascii')}", pool_size)
        found = self._transports.get(key)
        if found is None:
            limits = httpx2.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
            found = httpx2.AsyncHTTPTransport(limits=limits)
            self._transports[key] = found
        return found

    def client(
        self,
        service: str,
        base_url: str,
        api_key: SecretStr | str | None,
        options: RemoteOptions,
    ) -> AsyncOpenAI:
        """An SDK client for one table and one service (its own :class:`TableGate`)."""
        gate = TableGate(self.transport(base_url, options.pool_size), options, service, self)
        timeout = httpx2.Timeout(options.timeout_s, connect=options.connect_timeout_s)
        return openai_client(
            api_key,
            base_url,
            max_retries=0,  # the gate retries, with our limits
            timeout_s=timeout,
            http_client=httpx2.AsyncClient(transport=gate, timeout=timeout),
        )

    def for_provider(
        self, service: str, provider: RemoteProvider, *, base_url: str | None = None
    ) -> AsyncOpenAI:
        """A table's client for a ``providers.<service>`` section (``name``, ``base_url``,
        ``api_key``, ``options``); ``base_url`` overrides; OpenAI's API when neither is set."""
        url = base_url or provider.base_url or OPENAI_BASE_URL
        options = remote_options(service, provider.options)
        return self.client(service, url, provider.api_key, options)

    async def aclose(self) -> None:
        transports, self._transports = list(self._transports.values()), {}
        for transport in transports:
            await transport.aclose()


class TableGate(httpx2.AsyncBaseTransport):
    """One table's requests to one endpoint: bounded in flight, retried on 429/5xx."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        options: RemoteOptions,
        service: str,
        pool: InferencePool | None = None,
    ) -> None:
        self._inner = inner
        self.options = options
        self.service = service
        self._pool = pool
        self._slots = asyncio.Semaphore(options.per_table)
        self.in_flight = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()  # the body is sent again on a retry
        attempt = 0
        while True:
            waited = time.monotonic()
            await self._slots.acquire()
            self.in_flight += 1
            self._observe("wait", time.monotonic() - waited)
            sent = time.monotonic()
            try:
                response = await self._inner.handle_async_request(request)
            except (httpx2.ConnectError, httpx2.ConnectTimeout) as error:
                self._free()
                if attempt >= self.options.retries:
                    self._count("error")
                    raise
                delay = self._backoff(attempt)
                log.info("%s: %s; retrying in %.2f s", self.service, error, delay)
            except BaseException:
                self._free()
                self._count("error")
                raise
            else:
                self._observe("headers", time.monotonic() - sent)
                status = response.status_code
                wait = self._retry_delay(response, attempt)
                if wait is None:
                    self._count("ok" if status < 400 else "failed")
                    return _release_on_close(response, self._free)
                await response.aclose()
                self._free()
                delay = wait
                log.info("%s: HTTP %d; retrying in %.2f s", self.service, status, delay)
            self._count("retried")
            attempt += 1
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Nothing: the pool belongs to the process, not to one table."""

    def _retry_delay(self, response: httpx2.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None to hand the answer back as it is."""
        if response.status_code not in RETRY_STATUS or attempt >= self.options.retries:
            return None
        asked = _retry_after(response.headers)
        if asked is None:
            return self._backoff(attempt)
        return asked if asked <= self.options.max_backoff_s else None

    def _backoff(self, attempt: int) -> float:
        delay = min(self.options.backoff_s * 2**attempt, self.options.max_backoff_s)
        jittered: float = delay * (1 - 0.25 * random.random())
        return jittered

    def _free(self) -> None:
        self.in_flight -= 1
        self._slots.release()

    def _count(self, outcome: str) -> None:
        if self._pool is not None:
            self._pool.requests.labels(self.service, outcome).inc()

    def _observe(self, what: str, seconds: float) -> None:
        if self._pool is None:
            return
        histogram = self._pool.wait_seconds if what == "wait" else self._pool.header_seconds
        histogram.labels(self.service).observe(seconds)


def _retry_after(headers: httpx2.Headers) -> float | None:
    """``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``, in seconds."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


class _ReleasingStream(httpx2.AsyncByteStream):
    """A response body that gives its table's slot back when closed (or read to the end)."""

    def __init__(self, inner: Any, release: Any) -> None:
        self._inner = inner
        self._release = release
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._inner:
            yield part

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if not self._released:
                self._released = True
                self._release()


def _release_on_close(response: httpx2.Response, release: Any) -> httpx2.Response:
    return httpx2.Response(
        status_code=response.status_code,
        headers=response.headers,
        stream=_ReleasingStream(response.stream, release),
        extensions=response.extensions,
    )
