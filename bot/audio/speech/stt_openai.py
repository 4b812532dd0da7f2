"""Cloud (or any OpenAI-compatible) transcription through the official ``openai`` SDK.

Streams the result (``stream=True``: ``transcript.text.delta`` / ``.done`` events) where the
model supports it, plain JSON otherwise. Partials are off by default: re-sending the growing
utterance every 300 ms costs money; enable ``partials`` for the tier selector's early hints.
"""

from __future__ import annotations

import io
import logging
import wave
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import SecretStr

from bot.audio.speech.audio import STT_SAMPLE_RATE, float_to_pcm16
from bot.audio.speech.vocabulary import Vocabulary
from campaigns.basics import GlyphoxaError
from campaigns.providers.openai_client import openai_client
from campaigns.providers.usage import Usage, UsageSink

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAiStt", "wav_bytes"]

log = logging.getLogger(__name__)


def wav_bytes(audio: np.ndarray, sample_rate: int = STT_SAMPLE_RATE) -> bytes:
    """float32 mono -> a complete WAV file in memory."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(float_to_pcm16(audio))
    return buffer.getvalue()


class OpenAiStt:
    """``SttProvider`` over ``/v1/audio/transcriptions``."""

    def __init__(
        self,
        *,
        model: str = "gpt-4o-mini-transcribe",
        base_url: str | None = None,
        api_key: SecretStr | str | None = None,
        stream: bool = True,
        partials: bool = False,
        language: str | None = "en",
        timeout_s: float = 15.0,
        client: AsyncOpenAI | None = None,
    ) -> None:
        """``client``: a pooled, retrying one (``npcs.inference.pools``) instead of our own."""
        self._client = client or openai_client(api_key, base_url, timeout_s=timeout_s)
        self.model = model
        self.stream = stream
        self.partials = partials
        self.language = language
        self.cpu_bound = False  # a remote service: the CPU scheduler need not wait for it
        self.meter: UsageSink | None = None
        """The table's spend meter: each request reports the seconds of audio it sent."""

    def __repr__(self) -> str:
        return f"OpenAiStt(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    async def transcribe(
        self, audio: np.ndarray, *, partial: bool = False, vocabulary: Vocabulary | None = None
    ) -> str:
        if partial and not self.partials:
            return ""
        import openai

        prompt = vocabulary.prompt() if vocabulary else openai.omit
        language = self.language or openai.omit
        upload = ("speech.wav", wav_bytes(audio), "audio/wav")
        try:
            text = await self._request(upload, prompt, language)
        except openai.APIError as error:
            raise GlyphoxaError(f"transcription service failed: {error}") from None
        if self.meter is not None:  # billed per second of audio sent, partials too
            seconds = len(audio) / STT_SAMPLE_RATE
            self.meter.record(Usage("stt", self.model, audio_seconds=seconds))
        return text

    async def _request(self, upload: tuple[str, bytes, str], prompt: Any, language: Any) -> str:
        if not self.stream:
            result = await self._client.audio.transcriptions.create(
                file=upload,
                model=self.model,
                response_format="json",
                prompt=prompt,
                language=language,
            )
            return " ".join(result.text.split())
        stream = await self._client.audio.transcriptions.create(
            file=upload, model=self.model, stream=True, prompt=prompt, language=language
        )
        pieces: list[str] = []
        final: str | None = None
        async for event in stream:
            if event.type == "transcript.text.delta":
                pieces.append(event.delta)
            elif event.type == "transcript.text.done":
                final = event.text
        return " ".join((final if final is not None else "".join(pieces)).split())
