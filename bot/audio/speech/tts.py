"""Voices for NPCs: route each NPC's ``VoiceSettings`` to its provider, and stream sentences.

``VoiceRouter`` is itself a ``TtsProvider``: it picks Piper, OpenAI or espeak-ng by
``voice.provider``. Voices are checked against what is installed before a table starts
(``voice_problem``, the rule ``glyphoxa check`` applies), so a voice that does not exist is
refused, never replaced; a voice that breaks while the table runs (a speech server down) is
spoken by espeak-ng so the NPC still answers, and that is loud: an error in the log and
``on_fallback`` (the table tells the DM).
``speak_text`` speaks finished sentences into a mixer handle (``glyphoxa speech say``); the
table pipelines an engine's sentences itself (``bot.table.session.turns``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING

from bot.audio.speech.handle import SpeechHandle, SpeechResult
from bot.audio.speech.protocols import TtsProvider
from bot.audio.speech.tts_espeak import EspeakTts
from bot.audio.speech.tts_openai import OpenAiTts
from bot.audio.speech.tts_piper import PiperTts
from bot.settings.providers import TtsProvider as TtsSection
from campaigns.basics import AudioChunk, GlyphoxaError
from campaigns.providers.voices import VoiceInventory, VoiceSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["FallbackListener", "VoiceRouter", "speak_text"]

log = logging.getLogger(__name__)


FallbackListener = Callable[[VoiceSettings, str], None]


class VoiceRouter:
    """``TtsProvider`` that dispatches on ``voice.provider`` with an espeak-ng fallback.

    Args:
        providers: provider name -> TTS (default: Piper and espeak-ng).
        fallback: the provider that speaks when another fails mid-table (None: fail).
        inventory: the installed voices ``voice_problem`` checks against (None: no check).
    """

    def __init__(
        self,
        providers: dict[str, TtsProvider] | None = None,
        *,
        fallback: str | None = "espeak",
        inventory: VoiceInventory | None = None,
    ) -> None:
        self.providers: dict[str, TtsProvider] = providers or {
            "piper": PiperTts(),
            "espeak": EspeakTts(),
        }
        self.fallback = fallback
        self.inventory = inventory
        self.on_fallback: FallbackListener | None = None
        """Told (voice, reason) each time the fallback speaks instead (the table's alerts)."""

    def voice_problem(self, voice: VoiceSettings) -> str | None:
        """Why this router cannot speak ``voice`` as configured, or None when it can."""
        if self.inventory is None:
            return None
        return self.inventory.problem(voice.provider, voice.voice)

    @classmethod
    def from_config(
        cls, tts: TtsSection | None = None, *, client: AsyncOpenAI | None = None
    ) -> VoiceRouter:
        """Piper and espeak always; OpenAI when ``providers.tts`` names it (for its URL/key;
        ``client`` is a pooled one for it). ``options.all_voices: true`` sends Piper voices
        to that endpoint too (a TTS server of their own, which knows their names); espeak-ng
        stays local, also as the fallback."""
        inventory = VoiceInventory.from_tts(tts)
        piper = PiperTts(inventory.piper_default, voice_dirs=inventory.voice_dirs)
        providers: dict[str, TtsProvider] = {"piper": piper, "espeak": EspeakTts()}
        if tts is not None and tts.name == "openai":
            providers["openai"] = OpenAiTts(
                model=tts.model or "gpt-4o-mini-tts",
                base_url=tts.base_url,
                api_key=tts.api_key,
                client=client,
            )
            if inventory.piper_remote:
                providers["piper"] = providers["openai"]
        return cls(providers, inventory=inventory)

    async def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        provider = self.providers.get(voice.provider)
        produced = False
        try:
            if provider is None:
                raise GlyphoxaError(f"TTS provider {voice.provider!r} is not configured")
            async for chunk in provider.synthesize(text, voice):
                produced = True
                yield chunk
            return
        except GlyphoxaError as error:
            if produced or self.fallback is None or voice.provider == self.fallback:
                raise
            log.error(
                "%s voice %r failed (%s); speaking with %s instead",
                voice.provider,
                voice.voice or "default",
                error,
                self.fallback,
            )
            if self.on_fallback is not None:
                self.on_fallback(voice, str(error))
        fallback = self.providers[self.fallback]
        fallback_voice = VoiceSettings(provider=self.fallback)  # type: ignore[arg-type]
        async for chunk in fallback.synthesize(text, fallback_voice):
            yield chunk


async def _synthesize_into(
    handle: SpeechHandle,
    tts: TtsProvider,
    voice: VoiceSettings,
    sentence: str,
) -> None:
    first = True
    async for chunk in tts.synthesize(sentence, voice):
        if handle.done():
            return  # barge-in or mute: stop synthesizing for nobody
        handle.feed(chunk, text=sentence if first else None)
        first = False


async def speak_text(
    handle: SpeechHandle,
    tts: TtsProvider,
    voice: VoiceSettings,
    sentences: Iterable[str],
) -> SpeechResult:
    """Synthesize finished sentences into ``handle``, finish it and wait until played or cut."""
    try:
        for sentence in sentences:
            if handle.done():
                break
            await _synthesize_into(handle, tts, voice, sentence)
    finally:
        handle.finish()
    return await handle.wait()
