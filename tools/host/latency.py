"""Latency metadata of a tool and the tier it belongs to (docs/tools.md).

An MCP tool declares its latency in ``_meta["io.glyphoxa/latency"]``; older servers put a
``_metadata`` object inside the input schema instead. Both are read; bad values are ignored
with a warning rather than failing the server.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from campaigns.basics import DEFAULT_CEILINGS_MS, Tier
from tools.spec import LATENCY_META_KEY, LatencyMeta

__all__ = ["LEGACY_SCHEMA_KEY", "clean_input_schema", "parse_latency", "tier_for"]

log = logging.getLogger(__name__)

#: Where legacy servers put latency metadata: inside the tool's input schema.
LEGACY_SCHEMA_KEY = "_metadata"


def parse_latency(
    meta: Mapping[str, Any] | None,
    input_schema: Mapping[str, Any] | None = None,
    *,
    read_only_hint: bool | None = None,
    idempotent_hint: bool | None = None,
    tool: str = "?",
) -> LatencyMeta:
    """Read declared latency from ``_meta`` or, failing that, the legacy schema location.

    The MCP annotations ``readOnlyHint`` and ``idempotentHint`` count as declarations too
    (``read_only`` / ``idempotent``), so third-party tools without our metadata are probed
    and, if configured, cached."""
    body: Any = None
    if meta:
        body = meta.get(LATENCY_META_KEY)
    if body is None and input_schema:
        legacy = input_schema.get(LEGACY_SCHEMA_KEY)
        if isinstance(legacy, Mapping):
            nested = legacy.get(LATENCY_META_KEY)
            body = nested if isinstance(nested, Mapping) else legacy
    hinted = LatencyMeta(read_only=bool(read_only_hint), idempotent=bool(idempotent_hint))
    if body is None:
        return hinted
    if not isinstance(body, Mapping):
        log.warning("tool %s: latency metadata is not an object; treating it as undeclared", tool)
        return hinted
    estimated = _duration(body.get("estimated_duration_ms"), "estimated_duration_ms", tool)
    maximum = _duration(body.get("max_duration_ms"), "max_duration_ms", tool)
    if estimated is not None and maximum is not None and maximum < estimated:
        log.warning("tool %s: max_duration_ms < estimated_duration_ms; using the estimate", tool)
        maximum = estimated
    cacheable = _duration(body.get("cacheable_seconds"), "cacheable_seconds", tool) or 0.0
    read_only = body.get("read_only")
    return LatencyMeta(
        estimated_duration_ms=estimated,
        max_duration_ms=maximum,
        idempotent=body.get("idempotent") is True or bool(idempotent_hint),
        cacheable_seconds=cacheable,
        read_only=(read_only is True) or bool(read_only_hint),
    )


def _duration(value: Any, key: str, tool: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        log.warning("tool %s: %s=%r is not a number; ignored", tool, key, value)
        return None
    if value < 0:
        log.warning("tool %s: %s=%r is negative; ignored", tool, key, value)
        return None
    return float(value)


def clean_input_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The schema the LLM sees and arguments are validated against: an object schema without
    the legacy metadata key."""
    cleaned = {k: v for k, v in (schema or {}).items() if k != LEGACY_SCHEMA_KEY}
    cleaned.setdefault("type", "object")
    if cleaned.get("type") == "object":
        cleaned.setdefault("properties", {})
    return cleaned


def tier_for(
    p50_ms: float | None, ceilings: Mapping[Tier, int] = DEFAULT_CEILINGS_MS
) -> Tier | None:
    """Lowest tier whose ceiling the p50 fits; ``None`` if even DEEP is too slow.

    Undeclared and unmeasured (``None``) counts as DEEP, as the design says.
    """
    if p50_ms is None:
        return Tier.DEEP
    for tier in Tier:
        if p50_ms <= ceilings[tier]:
            return tier
    return None
