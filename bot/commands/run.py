"""``glyphoxa run``: start the Discord bot (slash commands; the DM starts sessions in voice)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from typing import Any

from campaigns.errors import GlyphoxaError

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    parser = sub.add_parser("run", help="run the Discord bot")
    parser.add_argument(
        "--campaign", default=None, help="campaign folder (default: campaign.path from the config)"
    )
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    import aiohttp
    import discord

    from bot.config_loader import load_config, require_discord_token
    from bot.discord_bot import GlyphoxaBot
    from bot.discord_bot.tables import configured_tables
    from bot.logging_setup import configure_logging
    from bot.voice.opus_decode import ensure_opus_loaded

    config = load_config(args.config)
    configure_logging(config.logging, verbose=getattr(args, "verbose", False))
    token = require_discord_token(config)
    library = ensure_opus_loaded()  # fail now, not when the first player speaks
    log.info("libopus: %s", library)
    bot = GlyphoxaBot(config, configured_tables(config, args.campaign))
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[None]] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, lambda: closing.append(loop.create_task(bot.close())))
    print("Glyphoxa is connecting to Discord (Ctrl+C to stop)...", flush=True)
    try:
        await bot.start(token)
    except discord.LoginFailure:
        raise GlyphoxaError(
            "Discord rejected the bot token (discord.token / $DISCORD_TOKEN)"
        ) from None
    except (aiohttp.ClientConnectionError, OSError) as error:
        raise GlyphoxaError(f"cannot reach Discord: {error}") from None
    except discord.PrivilegedIntentsRequired as error:
        raise GlyphoxaError(
            f"enable the required intents in the developer portal: {error}"
        ) from None
    finally:
        if not bot.is_closed():
            await bot.close()
        for task in closing:
            with contextlib.suppress(Exception):
                await task
    return 0
