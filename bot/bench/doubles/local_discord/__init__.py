"""A local Discord speaking the real wire protocols: for the tests and the soak bench.

Only what this machine cannot reach (Discord's servers) is replaced; the bot side is discord.py
and Glyphoxa's own voice client, unchanged.
"""

from __future__ import annotations

from bot.bench.doubles.local_discord.voice_server import LocalVoiceServer, RemotePlayer
from bot.bench.doubles.local_discord.world import LocalDiscord

__all__ = ["LocalDiscord", "LocalVoiceServer", "RemotePlayer"]
