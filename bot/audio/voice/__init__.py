"""DAVE-aware Discord voice: receive path (RTP -> transport decrypt -> DAVE -> Opus) and playback.

Everything here except :mod:`bot.audio.voice.client` and :mod:`bot.audio.voice.playback` works
without a Discord connection, so tests and benchmarks drive the very code the bot runs.
"""

from __future__ import annotations

from bot.audio.voice.receive_counters import DropReason, ReceiveCounters
from bot.audio.voice.receiver import VoiceFrame, VoiceReceiver

__all__ = ["DropReason", "ReceiveCounters", "VoiceFrame", "VoiceReceiver"]
