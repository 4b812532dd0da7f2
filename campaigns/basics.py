"""The project's basic vocabulary: the few types every layer speaks, defined once.

``campaigns`` is the lowest layer (imports flow ``bot -> npcs -> tools -> campaigns``), so what
all four packages share lives here, in one small module, rather than in whichever package
happened to need it first:

- :class:`GlyphoxaError`: a failure that is the user's to fix, shown without a traceback;
- :class:`Tier` (and :data:`TierName`, :data:`DEFAULT_CEILINGS_MS`): the latency tiers that
  the tool host, the tier selector, the NPC schema and the config all use;
- :class:`AudioChunk`: a piece of speech audio, from a voice or a speech-to-speech engine;
- :func:`percentile`: the one definition of p50/p95 that reports and benchmarks share, so their
  figures compare.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

__all__ = [
    "DEFAULT_CEILINGS_MS",
    "AudioChunk",
    "GlyphoxaError",
    "Tier",
    "TierName",
    "percentile",
]


class GlyphoxaError(Exception):
    """An expected failure: bad input, missing file, unreachable service.

    The CLI and the Discord front end print ``str(error)`` and nothing else, so the message must
    say what went wrong and, where possible, where (``file:line``) and how to fix it.
    """


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


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """A piece of speech: mono s16le ``pcm`` at ``sample_rate`` Hz, from a voice (TTS) or a
    speech-to-speech engine, on its way to the mixer."""

    pcm: bytes
    sample_rate: int

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile, q in [0, 100]; samples need not be sorted."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]
