"""Latency tiers shared by the tool host, tier selector and NPC schema (DESIGN.md 4)."""

from __future__ import annotations

import enum
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

__all__ = ["DEFAULT_CEILINGS_MS", "Tier", "TierName"]


class Tier(enum.IntEnum):
    """How long a turn's tools may take. Ordered: ``Tier.FAST < Tier.STANDARD < Tier.DEEP``."""

    FAST = 0
    STANDARD = 1
    DEEP = 2

    @classmethod
    def parse(cls, value: str | Tier) -> Tier:
        """Accept ``"fast"``, ``"FAST"`` or a Tier; a ValueError names the choices."""
        if isinstance(value, Tier):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            raise ValueError(f"unknown tier {value!r}; choose fast, standard or deep") from None

    @property
    def label(self) -> str:
        return self.name.lower()


#: Parallel tool latency a tier allows, in milliseconds (p50 of a tool must fit).
DEFAULT_CEILINGS_MS: dict[Tier, int] = {Tier.FAST: 500, Tier.STANDARD: 1500, Tier.DEEP: 4000}


#: A Tier in config and YAML: written ``fast``/``standard``/``deep``, parsed to ``Tier``.
TierName = Annotated[
    Tier,
    BeforeValidator(Tier.parse),
    PlainSerializer(lambda tier: tier.label, return_type=str),
    WithJsonSchema({"type": "string", "enum": ["fast", "standard", "deep"]}),
]
