"""``glyphoxa run`` in a child process against the local Discord: only Discord's addresses change.

``python -m tests.discord.shard_bot run --shard-count 2 --shard-ids 0`` with
``GLYPHOXA_TEST_DISCORD_API`` (the REST stand-in's base URL) and ``GLYPHOXA_TEST_DISCORD_GATEWAY``
(the gateway's); ``SSL_CERT_FILE`` names the voice servers' certificates, which the bot then
verifies like any other. Everything else is the production command line.
"""

from __future__ import annotations

import os
import sys

import discord.http
import yarl
from discord.gateway import DiscordWebSocket


def main() -> int:
    discord.http.Route.BASE = os.environ["GLYPHOXA_TEST_DISCORD_API"]
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(os.environ["GLYPHOXA_TEST_DISCORD_GATEWAY"])
    from bot.cli import main as glyphoxa

    return glyphoxa(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
