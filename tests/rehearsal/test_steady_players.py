"""Rehearsal players speak the same way at every run: the real Piper voice without its sampled
prosody noise, so Whisper hears a scene's lines the same way each time (NPC voices keep it)."""

from __future__ import annotations

from bot.audio.speech import PiperTts, VoiceRouter
from bot.frontends.rehearsal.players import steady_voices
from campaigns.providers.voices import VoiceSettings

LINE = "Bartok, who knows the docks?"
ARIN = VoiceSettings(provider="piper", speed=1.1, pitch_shift=3)


async def _audio(tts: object, voice: VoiceSettings) -> bytes:
    assert isinstance(tts, (VoiceRouter, PiperTts))
    return b"".join([chunk.pcm async for chunk in tts.synthesize(LINE, voice)])


async def test_players_piper_voices_are_steady_and_npcs_keep_their_variation() -> None:
    router = VoiceRouter.from_config()
    steady = steady_voices(router)
    assert isinstance(steady, VoiceRouter) and steady is not router
    first, second = await _audio(steady, ARIN), await _audio(steady, ARIN)
    assert first == second
    natural = [await _audio(router, ARIN) for _ in range(3)]  # the NPCs' router as it was
    assert any(natural[0] != other for other in natural[1:])
    assert steady.providers["espeak"] is router.providers["espeak"]
    piper = router.providers["piper"]
    assert isinstance(piper, PiperTts) and piper.variation == 1.0  # untouched
    assert steady_voices(piper).variation == 0.0  # type: ignore[attr-defined]
