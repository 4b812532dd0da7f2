"""``glyphoxa run``: start the Discord bot (slash commands; the DM starts sessions in voice).

``--shard-count N --shard-ids 0,1`` runs some of the bot's Discord shards in this process
(``bot/frontends/discord_bot/sharding.py``); open tables are kept in ``memory.url``'s database so
that, on PostgreSQL, a restarted or replaced process resumes its guilds' tables.

Before it connects to Discord, the campaign must pass ``glyphoxa check`` and every configured
model service must answer (a doctor line says which does not, and the fix); ``--anyway`` starts
the bot even so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from typing import Any

from bot.frontends.commands._options import (
    Subcommands,
    add_anyway_option,
    add_campaign_option,
    load_config,
    plain,
)

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "run",
        help="run the Discord bot",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(parser)
    parser.add_argument(
        "--shard-count",
        type=int,
        default=None,
        help="total Discord shards over every process (Discord requires sharding above 2,500 "
        "guilds); every process gets the same number",
    )
    parser.add_argument(
        "--shard-ids",
        default=None,
        help="the shards this process runs, e.g. 0,1 or 0-3 (default: all of --shard-count)",
    )
    add_anyway_option(parser)
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    from bot.audio.voice.opus_decode import ensure_opus_loaded
    from bot.frontends.discord_bot.sharding import parse_shard_ids
    from bot.frontends.doctor.preflight import preflight_or_stop
    from bot.settings.loader import require_discord_token
    from bot.telemetry.logging_setup import configure_logging
    from bot.telemetry.metrics import METRICS, start_metrics_server
    from campaigns.memory.table_registry import TableRegistry
    from npcs.inference.pools import InferencePool

    config = load_config(args)
    configure_logging(config.logging, verbose=getattr(args, "verbose", False))
    shard_ids = parse_shard_ids(args.shard_ids, args.shard_count)
    token = require_discord_token(config)
    _check_token_shape(token)  # a mistyped token named now, not as Discord's bare 401
    stop = await preflight_or_stop(  # the campaign and every model server, before Discord
        "run", config, config_path=args.config, campaign_dir=None, anyway=args.anyway
    )
    if stop is not None:
        return stop
    library = ensure_opus_loaded()  # fail now, not when the first player speaks
    log.info("libopus: %s", library)
    registry = await TableRegistry.open(config.memory.url)
    inference = InferencePool()  # connections to model servers, shared by every table
    detach = METRICS.attach(inference.registry)
    server = start_metrics_server(config.metrics)  # one /metrics for every table here
    console = await _start_console(config, args)
    try:
        return await _serve(config, token, args, shard_ids, registry, inference, console)
    finally:
        if console is not None:
            await console.stop()
        if server is not None:
            server.close()
        detach()
        await inference.aclose()
        await registry.close()


async def _start_console(config: Any, args: argparse.Namespace) -> Any:
    """The DM's console (``console.enabled``); one that cannot start is said loudly and the
    bot runs on without it (``/console`` then says so too)."""
    import sys

    from bot.frontends.console import console_for
    from bot.settings.loader import resolve_config_path
    from campaigns.basics import GlyphoxaError

    if not config.console.enabled:
        return None
    console = console_for(config, config_path=resolve_config_path(args.config))
    try:
        url = await console.start()
    except GlyphoxaError as error:
        log.error("%s; the bot runs without its console", error)
        print(f"error: {error}; the bot runs without its console", file=sys.stderr, flush=True)
        return None
    print(
        f"DM console at {url}: log in with /console in Discord or glyphoxa console link",
        flush=True,
    )
    return console


def _check_token_shape(token: str) -> None:
    from bot.frontends.discord_setup.token import TokenProblem, parse_bot_token
    from campaigns.basics import GlyphoxaError

    try:
        parse_bot_token(token)
    except TokenProblem as problem:
        raise GlyphoxaError(
            f"discord.token: {problem}; fix: {problem.fix} (glyphoxa discord setup shows every "
            "step)"
        ) from None


async def _serve(
    config: Any,
    token: str,
    args: argparse.Namespace,
    shard_ids: list[int] | None,
    registry: Any,
    inference: Any,
    console: Any = None,
) -> int:
    import aiohttp
    import discord

    from bot.frontends.discord_bot.sharding import make_bot
    from bot.frontends.discord_bot.tables import configured_tables
    from campaigns.basics import GlyphoxaError

    bot = make_bot(
        config,
        configured_tables(config, args.campaign, inference),
        shard_count=args.shard_count,
        shard_ids=shard_ids,
        table_registry=registry,
        console=console.hub if console is not None else None,
    )
    if args.shard_count is not None:
        shards = ", ".join(map(str, shard_ids)) if shard_ids else "all"
        print(f"Shards {shards} of {args.shard_count}.", flush=True)
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
            "Discord rejected the bot token (discord.token / $DISCORD_TOKEN): it was reset, or "
            "it is another application's; copy a new one (Developer Portal > your application "
            "> Bot > Reset Token)"
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
