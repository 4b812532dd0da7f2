"""OpenAI (or compatible) TTS, streamed as raw 24 kHz s16le PCM through the official SDK.

Pitch uses the same relabelling trick as Piper, but OpenAI has no length control to
compensate, so a pitch-shifted OpenAI voice also speaks a little faster or slower.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from pydantic import SecretStr

from bot.audio.speech.tts_piper import pitch_factor
from campaigns.basics import AudioChunk, GlyphoxaError
from campaigns.providers.openai_client import openai_client
from campaigns.providers.usage import Usage, UsageSink, serving_npc
from campaigns.providers.voices import VoiceSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OPENAI_TTS_RATE", "OpenAiTts"]

log = logging.getLogger(__name__)

OPENAI_TTS_RATE = 24_000
_CHUNK_BYTES = 2400  # 50 ms


class OpenAiTts:
    """``TtsProvider`` over ``/v1/audio/speech`` with ``response_format="pcm"``."""

    def __init__(
        self,
        *,
        model: str = "gpt-4o-mini-tts",
        base_url: str | None = None,
        api_key: SecretStr | str | None = None,
        default_voice: str = "alloy",
        timeout_s: float = 15.0,
        client: AsyncOpenAI | None = None,
    ) -> None:
        """``client``: a pooled, retrying one (``npcs.inference.pools``) instead of our own."""
        self._client = client or openai_client(api_key, base_url, timeout_s=timeout_s)
        self.model = model
        self.default_voice = default_voice
        self.meter: UsageSink | None = None
        """The table's spend meter: each request reports the characters it sent."""

    def __repr__(self) -> str:
        return f"OpenAiTts(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    async def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        import openai

        rate = round(OPENAI_TTS_RATE * pitch_factor(voice.pitch_shift))
        carry = b""
        try:
            async with self._client.audio.speech.with_streaming_response.create(
                model=self.model,
                voice=voice.voice or self.default_voice,
                input=text,
                response_format="pcm",
                speed=voice.speed,
            ) as response:
                if self.meter is not None:  # billed per character sent, however much is played
                    used = Usage("tts", self.model, serving_npc.get(), characters=len(text))
                    self.meter.record(used)
                async for data in response.iter_bytes(_CHUNK_BYTES):
                    data = carry + data
                    usable = len(data) - len(data) % 2
                    carry = data[usable:]
                    if usable:
                        yield AudioChunk(data[:usable], rate)
        except openai.APIError as error:
            raise GlyphoxaError(f"speech service failed: {error}") from None
