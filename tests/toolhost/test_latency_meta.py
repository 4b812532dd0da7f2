"""Declared latency: where it is read from and which tier it yields."""

from __future__ import annotations

import logging

import pytest

from campaigns.basics import Tier
from tools.host.latency import clean_input_schema, parse_latency, tier_for
from tools.spec import LATENCY_META_KEY, LatencyMeta


def test_meta_key_wins_over_legacy_schema():
    meta = {
        LATENCY_META_KEY: {
            "estimated_duration_ms": 40,
            "max_duration_ms": 90,
            "idempotent": True,
            "cacheable_seconds": 5,
        }
    }
    schema = {"type": "object", "_metadata": {"estimated_duration_ms": 3000}}
    assert parse_latency(meta, schema) == LatencyMeta(40, 90, True, 5.0)


def test_legacy_metadata_in_input_schema_flat_and_nested():
    flat = {"type": "object", "_metadata": {"estimated_duration_ms": 700, "max_duration_ms": 2000}}
    assert parse_latency(None, flat).estimated_duration_ms == 700
    nested = {"_metadata": {LATENCY_META_KEY: {"estimated_duration_ms": 12}}}
    assert parse_latency({}, nested).estimated_duration_ms == 12
    assert "_metadata" not in clean_input_schema(flat)
    assert clean_input_schema(None) == {"type": "object", "properties": {}}


def test_round_trip_with_the_spec_helper():
    declared = LatencyMeta(5, 50, idempotent=True, cacheable_seconds=10, read_only=True)
    assert parse_latency(declared.to_meta()) == declared


def test_bad_values_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture):
    meta = {LATENCY_META_KEY: {"estimated_duration_ms": "fast", "max_duration_ms": -1}}
    with caplog.at_level(logging.WARNING):
        parsed = parse_latency(meta, tool="srv/t")
    assert parsed.estimated_duration_ms is None and parsed.max_duration_ms is None
    assert "srv/t" in caplog.text
    assert parse_latency({LATENCY_META_KEY: "nonsense"}) == LatencyMeta()


def test_max_below_estimate_is_raised_to_the_estimate():
    meta = {LATENCY_META_KEY: {"estimated_duration_ms": 300, "max_duration_ms": 100}}
    assert parse_latency(meta).max_duration_ms == 300


def test_read_only_hint_from_annotations():
    assert parse_latency(None, None, read_only_hint=True).read_only


@pytest.mark.parametrize(
    ("p50", "tier"),
    [
        (None, Tier.DEEP),
        (0, Tier.FAST),
        (500, Tier.FAST),
        (501, Tier.STANDARD),
        (1500, Tier.STANDARD),
        (1501, Tier.DEEP),
        (4000, Tier.DEEP),
        (4001, None),
    ],
)
def test_tier_boundaries(p50: float | None, tier: Tier | None):
    assert tier_for(p50) is tier


def test_custom_ceilings():
    ceilings = {Tier.FAST: 100, Tier.STANDARD: 200, Tier.DEEP: 300}
    assert tier_for(150, ceilings) is Tier.STANDARD
