"""Opus decoded straight to what the recognizer hears: 16 kHz mono.

A player's audio only goes to the speech lanes, which want 16 kHz mono. libopus decodes to any
of its rates natively (it simply does not synthesize the upper band), so decoding at 16 kHz
mono costs a fraction of decoding 48 kHz stereo, and the lane no longer resamples: the two
most expensive steps per active speaker, measured in ``glyphoxa bench receive``.

Same reorder buffer, loss concealment and counters as :class:`~bot.audio.voice.opus_decode
.SpeakerDecoder`; only the output format differs (640-byte 20 ms frames).
"""

from __future__ import annotations

import discord.opus

from bot.audio.voice.opus_decode import SpeakerDecoder, _PcmDecoder

__all__ = ["STT_FRAME_BYTES", "SttSpeakerDecoder"]

STT_FRAME_BYTES = 640
"""20 ms of 16 kHz mono s16le (``bot.audio.speech.STT_FRAME_BYTES``)."""


class _Mono16kOpus(discord.opus.Decoder):
    """discord.py's libopus decoder state, created for 16 kHz mono output."""

    SAMPLING_RATE = 16_000
    CHANNELS = 1


class SttSpeakerDecoder(SpeakerDecoder):
    """One SSRC's decoder whose frames are 16 kHz mono s16le, ready for a speech lane."""

    frame_bytes = STT_FRAME_BYTES

    def _new_pcm_decoder(self) -> _PcmDecoder:
        return _PcmDecoder(_Mono16kOpus())  # type: ignore[no-untyped-call]
