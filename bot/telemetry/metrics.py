"""Prometheus metrics of the running bot, served when ``metrics.enabled`` is set.

One ``Metrics`` object holds every collector in its own registry, so tests and rehearsals can
make a private one; the bot uses the module-level ``METRICS``. Other parts record through it:

- receive path: ``detach = METRICS.track_receiver(receiver.snapshot)`` (read at scrape time),
  or ``METRICS.packets.labels("received"|"dropped"|"decrypt_failed").inc()``
- speech: ``METRICS.stt_seconds.labels("partial"|"final"|"second_look"|"slot_look").observe(s)``,
  ``METRICS.tts_seconds.observe(s)`` (time to first audio), ``METRICS.active_speakers.set(n)``
- table session: ``METRICS.observe_turn(stages_ms)``, ``METRICS.observe_tool(status, tier)``
- voice connection: ``METRICS.voice_events.labels(event, cause).inc()`` (deaf, dave_recovery,
  ended, rejoined, lost)
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.metrics_core import CounterMetricFamily, Metric

from bot.settings.config import MetricsConfig

__all__ = ["METRICS", "Metrics", "MetricsServer", "start_metrics_server"]

log = logging.getLogger(__name__)

#: Voice latency buckets (seconds): fine below one second, where the goals live.
_LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 15.0,
)  # fmt: skip


@dataclass(slots=True)
class Metrics:
    """All collectors of one bot process (or one rehearsal)."""

    registry: CollectorRegistry = field(
        default_factory=lambda: CollectorRegistry(auto_describe=True)
    )
    turn_stage_seconds: Histogram = field(init=False)
    tool_calls: Counter = field(init=False)
    stt_seconds: Histogram = field(init=False)
    tts_seconds: Histogram = field(init=False)
    packets: _PacketCounts = field(init=False)
    active_speakers: Gauge = field(init=False)
    turns: Counter = field(init=False)
    speech_repairs: Counter = field(init=False)
    failures: Counter = field(init=False)
    voice_events: Counter = field(init=False)

    def __post_init__(self) -> None:
        reg = self.registry
        self.turn_stage_seconds = Histogram(
            "glyphoxa_turn_stage_seconds",
            "Latency of one NPC turn by stage (e.g. stt_final, llm_first_token, voice_to_voice).",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.tool_calls = Counter(
            "glyphoxa_tier_tool_calls",
            "Tool calls by result status and the turn's effective tier.",
            ["status", "tier"],
            registry=reg,
        )
        self.stt_seconds = Histogram(
            "glyphoxa_stt_seconds",
            "Speech-to-text compute time per transcription.",
            ["kind"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.tts_seconds = Histogram(
            "glyphoxa_tts_seconds",
            "Text-to-speech time to first audio per sentence.",
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.packets = _PacketCounts()
        reg.register(self.packets)
        self.active_speakers = Gauge(
            "glyphoxa_active_speakers", "Players currently speaking.", registry=reg
        )
        self.turns = Counter(
            "glyphoxa_turns_total",
            "NPC turns by outcome: done, interrupted, failed.",
            ["outcome", "tier"],
            registry=reg,
        )
        self.speech_repairs = Counter(
            "glyphoxa_speech_repairs_total",
            "What clean speech did to NPC answers, by kind (label, echo, fallback, ...); "
            "kind budget counts answers cut at their spoken budget.",
            ["kind"],
            registry=reg,
        )
        self.failures = Counter(
            "glyphoxa_failures_total",
            "Failures the DM was told about, by part (llm_server, npc_turn, ...).",
            ["part"],
            registry=reg,
        )
        self.voice_events = Counter(
            "glyphoxa_voice_events_total",
            "Voice connection events (deaf, dave_recovery, ended, rejoined, lost) by cause.",
            ["event", "cause"],
            registry=reg,
        )

    def observe_turn(self, stages_ms: Mapping[str, float | None]) -> None:
        """Record one turn's stage latencies (milliseconds; ``None`` stages are skipped)."""
        for stage, ms in stages_ms.items():
            if ms is not None and ms >= 0:
                self.turn_stage_seconds.labels(stage).observe(ms / 1000.0)

    def observe_speech(self, repairs: Mapping[str, int], budget_hit: bool) -> None:
        """Record what clean speech did to one answer and whether it hit its budget."""
        for kind, times in repairs.items():
            self.speech_repairs.labels(kind).inc(times)
        if budget_hit:
            self.speech_repairs.labels("budget").inc()

    def observe_tool(self, status: str, tier: str) -> None:
        self.tool_calls.labels(status, tier).inc()

    def track_receiver(self, snapshot: Callable[[], Any]) -> Callable[[], None]:
        """Count a voice receive path's packets at scrape time; returns ``detach``.

        ``snapshot()`` returns ``bot.audio.voice`` ``ReceiveCounters`` (``received`` and a
        ``dropped`` mapping by reason): decrypt failures (transport or DAVE) are reported as
        ``decrypt_failed``, every other drop as ``dropped``.
        """
        self.packets.sources.append(snapshot)

        def detach() -> None:
            with contextlib.suppress(ValueError):
                self.packets.sources.remove(snapshot)

        return detach

    def attach(self, registry: CollectorRegistry) -> Callable[[], None]:
        """Serve another registry's metrics (e.g. a tool host's) here; returns ``detach``.

        A table's parts keep private registries, so a second table (another guild, or a new
        session after ``/session stop``) never collides; while two tables run at once, only the
        first one's part metrics are exposed.
        """
        bridge = _RegistryBridge(registry)
        try:
            self.registry.register(bridge)
        except ValueError as error:
            log.info("metrics of a second table are not exposed: %s", error)
            return lambda: None

        def detach() -> None:
            with contextlib.suppress(KeyError):
                self.registry.unregister(bridge)

        return detach

    def exposition(self) -> str:
        """The text a scrape would return (used by tests and ``status``)."""
        return generate_latest(self.registry).decode()

    def sample(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """Current value of one sample, e.g. ``sample("glyphoxa_tier_tool_calls", {...})``."""
        value = self.registry.get_sample_value(name, dict(labels or {}))
        return None if value is None else float(value)


_DECRYPT_REASONS = frozenset({"decrypt_failed", "dave_failed"})


class _PacketCounts:
    """``glyphoxa_voice_packets_total{outcome}``: direct increments plus tracked receivers."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(("received", "dropped", "decrypt_failed"), 0.0)
        self.sources: list[Callable[[], Any]] = []

    def labels(self, outcome: str) -> _PacketCounter:
        if outcome not in self.counts:
            raise ValueError(f"unknown packet outcome {outcome!r}")
        return _PacketCounter(self, outcome)

    def describe(self) -> list[Metric]:
        return [self._family()]

    def collect(self) -> Iterator[Metric]:
        totals = dict(self.counts)
        for snapshot in list(self.sources):
            try:
                counters = snapshot()
            except Exception:  # a closing voice connection must not break a scrape
                log.debug("receive counters unavailable", exc_info=True)
                continue
            totals["received"] += counters.received
            for reason, count in counters.dropped.items():
                key = "decrypt_failed" if str(reason) in _DECRYPT_REASONS else "dropped"
                totals[key] += count
        family = self._family()
        for outcome, value in totals.items():
            family.add_metric([outcome], value)
        yield family

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "glyphoxa_voice_packets",
            "Voice packets by outcome: received, dropped, decrypt_failed.",
            labels=["outcome"],
        )


@dataclass(frozen=True, slots=True)
class _PacketCounter:
    owner: _PacketCounts
    outcome: str

    def inc(self, amount: float = 1.0) -> None:
        self.owner.counts[self.outcome] += amount


class _RegistryBridge:
    """A collector that yields everything another registry holds."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()


METRICS = Metrics()


@dataclass(slots=True)
class MetricsServer:
    """A running ``/metrics`` HTTP endpoint; ``close()`` stops it."""

    host: str
    port: int
    _server: Any
    _thread: Any

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def start_metrics_server(config: MetricsConfig, metrics: Metrics = METRICS) -> MetricsServer | None:
    """Serve ``metrics`` on ``config.host:config.port`` if enabled.

    Returns None when metrics are disabled. The server runs on its own daemon thread.
    """
    if not config.enabled:
        return None
    try:
        server, thread = start_http_server(config.port, addr=config.host, registry=metrics.registry)
    except OSError as error:
        from campaigns.basics import GlyphoxaError

        raise GlyphoxaError(
            f"cannot serve metrics on {config.host}:{config.port}: {error.strerror or error}; "
            "change metrics.port in glyphoxa.yaml"
        ) from None
    port = server.server_address[1]
    log.info("metrics at http://%s:%d/metrics", config.host, port)
    return MetricsServer(config.host, port, server, thread)
