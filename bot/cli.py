"""The ``glyphoxa`` command line.

Each subcommand lives in its own module under ``bot/frontends/commands/`` and exposes
``register(subparsers)``; modules are discovered, so adding a command never edits this file.
``glyphoxa bench`` is the one command kept elsewhere: it is the harness room's door
(``bot/bench/command.py``), so that no front end imports the harness.
Building the parser imports only argparse-level code (``glyphoxa --help`` stays fast); a
command's handler imports what it needs when it runs. A handler returns an exit code (or a
coroutine returning one). Expected failures raise ``GlyphoxaError`` and are printed as one
clean message, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import inspect
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from bot.frontends.commands import CommandEntry, grouped, register_module, register_modules
from bot.frontends.commands._options import add_global_options, share_global_options
from campaigns.basics import GlyphoxaError

__all__ = ["build_parser", "main"]

log = logging.getLogger(__name__)

_DESCRIPTION = "Voice bot that lets tabletop-RPG players talk to AI NPCs."
_USAGE = "glyphoxa [-h] [-c CONFIG] [-v] COMMAND [options]"
_FOOTER = (
    "Every command reads glyphoxa.yaml (-c CONFIG, else $GLYPHOXA_CONFIG, else ./glyphoxa.yaml).\n"
    "Every command that works on a campaign works on campaign.path from it; --campaign DIR\n"
    "after the command's name overrides it (the others say they take none).\n"
    "Run 'glyphoxa COMMAND --help' for a command's options."
)


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class GlyphoxaParser(argparse.ArgumentParser):
    """argparse, plus "did you mean ...?" for a mistyped command or choice (its subcommand
    parsers are of this class too)."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            close = difflib.get_close_matches(found.group(1), choices, n=1)
            if close:
                message = f"{message}; did you mean {close[0]!r}?"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree: every discovered command, ``-c``/``-v`` accepted everywhere."""
    parser = GlyphoxaParser(
        prog="glyphoxa",
        usage=_USAGE,
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_global_options(parser)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", prog="glyphoxa", help=argparse.SUPPRESS
    )
    from bot.bench import command as bench_door
    from bot.frontends import commands

    entries = register_modules(commands.__path__, commands.__name__, sub)
    entries += register_module(bench_door, sub)
    parser.epilog = _command_list(entries) + "\n\n" + _FOOTER
    share_global_options(parser)
    return parser


def _command_list(entries: Sequence[CommandEntry]) -> str:
    width = max((len(entry.name) for entry in entries), default=0) + 2
    blocks = []
    for title, members in grouped(entries):
        lines = [f"{title}:"]
        lines += [f"  {entry.name.ljust(width)}{entry.help}".rstrip() for entry in members]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from bot.settings.config import LoggingConfig
    from bot.telemetry.logging_setup import configure_logging, reset_logging

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
    except BrokenPipeError:  # the reader went away (glyphoxa ... | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        reset_logging()  # main may run in a host process (tests): leave logging as found
        root.setLevel(level_before)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
