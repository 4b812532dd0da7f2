"""The ``glyphoxa`` command line.

Each subcommand lives in its own module under ``bot/commands/`` and exposes
``register(subparsers)``; modules are discovered, so adding a command never edits this file.
A command handler returns an exit code (or a coroutine returning one). Expected failures raise
``GlyphoxaError`` and are printed as one clean message, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import sys
from collections.abc import Sequence

from campaigns.errors import GlyphoxaError

__all__ = ["build_parser", "main"]

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glyphoxa",
        description="Voice bot that lets tabletop-RPG players talk to AI NPCs.",
    )
    parser.add_argument(
        "--config",
        "-c",
        default=None,
        help="path to glyphoxa.yaml (default: $GLYPHOXA_CONFIG or ./glyphoxa.yaml)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from bot import commands

    commands.register_modules(commands.__path__, commands.__name__, sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from bot.config import LoggingConfig
    from bot.logging_setup import configure_logging, reset_logging

    root = logging.getLogger()
    level_before = root.level
    # Warnings only until a command has read the config's logging section (run, rehearse);
    # like logging.basicConfig, nothing changes when the host (pytest) set logging up.
    if not root.handlers:
        configure_logging(LoggingConfig(level="WARNING"), verbose=args.verbose)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
        if inspect.iscoroutine(result):
            result = asyncio.run(result)
        return int(result or 0)
    except GlyphoxaError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        reset_logging()  # main may run in a host process (tests): leave logging as found
        root.setLevel(level_before)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
