"""Models of ``glyphoxa.yaml``'s ``pricing`` and ``session`` sections: what provider calls cost
and what a night may spend.

Prices are US dollars. ``DEFAULT_PRICES`` holds the cloud providers the project supports
(OpenAI, Groq, OpenAI Realtime, OpenAI's speech recognition and voices), as their pricing pages
listed them (see ``PRICES_AS_OF``); a price the DM writes under ``pricing`` overrides the default
for that model. Local models (the bundled server, a server of your own with ``name: local``,
faster-whisper, Piper, espeak-ng) cost nothing.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.settings.providers import LlmProvider

__all__ = [
    "DEFAULT_PRICES",
    "PRICES_AS_OF",
    "EmbeddingPrice",
    "PricingConfig",
    "RealtimePrice",
    "SessionConfig",
    "SpeechPrice",
    "SpendConfig",
    "TokenPrice",
    "TranscriptionPrice",
]

PRICES_AS_OF = "2025-08 (openai.com/api/pricing, groq.com/pricing)"
"""When and where the default prices were read; prices change, so check them."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class TokenPrice(_Strict):
    """A language model's price in US dollars per million tokens."""

    input_per_million: float = Field(ge=0)
    """Prompt tokens (system prompt, scene, tools, the player's words)."""
    output_per_million: float = Field(ge=0)
    """Tokens the model wrote."""


class RealtimePrice(TokenPrice):
    """A realtime model's price in US dollars per million tokens, text and audio apart."""

    audio_input_per_million: float = Field(ge=0)
    """Audio tokens heard (the players' speech)."""
    audio_output_per_million: float = Field(ge=0)
    """Audio tokens spoken."""


class SpeechPrice(_Strict):
    """A voice's price in US dollars per million characters sent."""

    per_million_characters: float = Field(ge=0)


class EmbeddingPrice(_Strict):
    """An embedding model's price in US dollars per million tokens embedded."""

    input_per_million: float = Field(ge=0)


class TranscriptionPrice(_Strict):
    """A speech recognizer's price in US dollars per minute of audio sent."""

    per_minute: float = Field(ge=0)


class PricingConfig(_Strict):
    """Prices per model name (as ``providers.*.model`` writes it), added to or overriding the
    defaults; see the defaults and their date in the models guide."""

    llm: dict[str, TokenPrice] = Field(default_factory=dict)
    """``providers.llm`` and the spend fallback: ``{model: {input_per_million,
    output_per_million}}``."""
    realtime: dict[str, RealtimePrice] = Field(default_factory=dict)
    """``providers.realtime``: text and audio tokens."""
    tts: dict[str, SpeechPrice] = Field(default_factory=dict)
    """``providers.tts`` (``name: openai``): ``{model: {per_million_characters}}``."""
    stt: dict[str, TranscriptionPrice] = Field(default_factory=dict)
    """``providers.stt`` (``name: openai``): ``{model: {per_minute}}``."""
    embeddings: dict[str, EmbeddingPrice] = Field(default_factory=dict)
    """``providers.embeddings`` (campaign memory's search): ``{model: {input_per_million}}``.
    Session summaries are priced as ``providers.llm``'s model under ``llm``."""

    def merged(self) -> PricingConfig:
        """The defaults with the DM's prices written over them."""
        return PricingConfig(
            llm={**DEFAULT_PRICES.llm, **self.llm},
            realtime={**DEFAULT_PRICES.realtime, **self.realtime},
            tts={**DEFAULT_PRICES.tts, **self.tts},
            stt={**DEFAULT_PRICES.stt, **self.stt},
            embeddings={**DEFAULT_PRICES.embeddings, **self.embeddings},
        )


def _llm(input_per_million: float, output_per_million: float) -> TokenPrice:
    return TokenPrice(input_per_million=input_per_million, output_per_million=output_per_million)


def _realtime(text_in: float, text_out: float, audio_in: float, audio_out: float) -> RealtimePrice:
    return RealtimePrice(
        input_per_million=text_in,
        output_per_million=text_out,
        audio_input_per_million=audio_in,
        audio_output_per_million=audio_out,
    )


DEFAULT_PRICES = PricingConfig(
    llm={
        "gpt-4o-mini": _llm(0.15, 0.60),
        "gpt-4o": _llm(2.50, 10.00),
        "gpt-4.1": _llm(2.00, 8.00),
        "gpt-4.1-mini": _llm(0.40, 1.60),
        "gpt-4.1-nano": _llm(0.10, 0.40),
        "gpt-5": _llm(1.25, 10.00),
        "gpt-5-mini": _llm(0.25, 2.00),
        "gpt-5-nano": _llm(0.05, 0.40),
        # Groq
        "llama-3.1-8b-instant": _llm(0.05, 0.08),
        "llama-3.3-70b-versatile": _llm(0.59, 0.79),
        "openai/gpt-oss-20b": _llm(0.10, 0.50),
        "openai/gpt-oss-120b": _llm(0.15, 0.75),
    },
    realtime={
        "gpt-realtime": _realtime(4.00, 16.00, 32.00, 64.00),
        "gpt-4o-realtime-preview": _realtime(5.00, 20.00, 40.00, 80.00),
        "gpt-4o-mini-realtime-preview": _realtime(0.60, 2.40, 10.00, 20.00),
    },
    tts={
        "tts-1": SpeechPrice(per_million_characters=15.00),
        "tts-1-hd": SpeechPrice(per_million_characters=30.00),
        # billed per token; ~$0.015 a minute at ~1,000 characters a minute
        "gpt-4o-mini-tts": SpeechPrice(per_million_characters=15.00),
    },
    embeddings={
        "text-embedding-3-small": EmbeddingPrice(input_per_million=0.02),
        "text-embedding-3-large": EmbeddingPrice(input_per_million=0.13),
        "text-embedding-ada-002": EmbeddingPrice(input_per_million=0.10),
    },
    stt={
        "whisper-1": TranscriptionPrice(per_minute=0.006),
        "gpt-4o-transcribe": TranscriptionPrice(per_minute=0.006),
        "gpt-4o-mini-transcribe": TranscriptionPrice(per_minute=0.003),
        # Groq: $0.111 and $0.04 an hour
        "whisper-large-v3": TranscriptionPrice(per_minute=0.00185),
        "whisper-large-v3-turbo": TranscriptionPrice(per_minute=0.000667),
    },
)


class SpendConfig(_Strict):
    """What a session may spend on cloud providers, in US dollars; empty: no limit."""

    soft: float | None = Field(default=None, gt=0)
    """At this cost the DM is told once (the text channel, the rehearsal report)."""
    hard: float | None = Field(default=None, gt=0)
    """At this cost every NPC moves to ``on_hard``'s cheaper way of answering, and the DM is
    told."""
    on_hard: Literal["fallback", "fast"] = "fallback"
    """``fallback``: every NPC (realtime ones too) answers through ``fallback``'s model;
    ``fast``: NPCs keep their models but every turn is FAST (fewer, cheaper tool rounds) until
    the DM sets a tier with ``/tier``."""
    fallback: LlmProvider | None = None
    """The language model NPCs move to at the hard limit, written like ``providers.llm``
    (``name: local`` starts the bundled model with the table, so the switch is instant)."""

    @model_validator(mode="after")
    def _limits_make_sense(self) -> Self:
        if self.soft is not None and self.hard is not None and self.soft >= self.hard:
            raise ValueError(
                f"soft ({self.soft:g}) must be below hard ({self.hard:g}): the warning comes "
                "before the switch"
            )
        if self.hard is not None and self.on_hard == "fallback" and self.fallback is None:
            raise ValueError(
                "hard is set with on_hard: fallback but no fallback model: add fallback: "
                "{name: local} (the bundled model) or on_hard: fast"
            )
        return self


class SessionConfig(_Strict):
    """How a session runs beyond its parts: its spending limits, and how a table nobody is at
    ends itself."""

    spend: SpendConfig = Field(default_factory=SpendConfig)
    """Soft and hard spending limits per session, and what the hard one does."""
    idle_close_s: float = Field(default=600.0, ge=0)
    """End the session once nobody (bots aside) has been in its voice channel for this many
    seconds: it is saved as by ``/session stop``, the DM is told in the session's text channel
    and the bot leaves. The countdown starts when the last person leaves; anyone joining before
    it ends cancels it. 0: never."""
