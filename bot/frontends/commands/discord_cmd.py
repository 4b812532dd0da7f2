"""``glyphoxa discord setup``: from nothing to the bot in your server, step by step.

Reads the bot token the way ``glyphoxa run`` does (``discord.token``, which the shipped
``glyphoxa.yaml`` takes from ``$DISCORD_TOKEN``), checks its shape without printing it, derives
the application id from it and prints the invite link with exactly the scopes and permissions
the bot uses (each named with why), the intents to leave on or off in the Developer Portal,
where the server id comes from and which key takes it, who may act as the Dungeon Master, and
what to run next. Exit code 0 when the token is well-formed, 1 when it is missing or malformed
(the guide is printed either way).
"""

from __future__ import annotations

import argparse
import json

from bot.frontends.commands._options import Subcommands

__all__ = ["register"]

_SETUP_HELP = """\
Connect Glyphoxa to Discord, step by step: create the application, check the bot token
(read like glyphoxa run does: discord.token, which the shipped glyphoxa.yaml takes from
DISCORD_TOKEN; never printed), the invite link with exactly the permissions the bot uses, the
intents, your server's id (discord.guild_ids) and who may act as the Dungeon Master.

Exit code 0 when the token is well-formed, 1 when it is missing or malformed (the steps are
printed either way)."""


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "discord",
        help="connect the bot to Discord: invite link, permissions, intents, DM role",
        description="Connect Glyphoxa to Discord.",
    )
    commands = parser.add_subparsers(dest="discord_command", metavar="SUBCOMMAND")
    setup = commands.add_parser(
        "setup",
        help="check the token and print the invite link and every step to the first session",
        description=_SETUP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    setup.add_argument(
        "--application-id",
        default=None,
        metavar="ID",
        help="the application id (General Information > Application ID), for an invite link "
        "before a token is set; default: derived from the token",
    )
    setup.add_argument("--json", action="store_true", help="print the report as JSON")
    setup.set_defaults(func=_setup)
    parser.set_defaults(func=lambda args: _no_subcommand(parser))


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _setup(args: argparse.Namespace) -> int:
    from bot.frontends.discord_setup.guide import as_json, inspect_setup, render_text
    from bot.settings.loader import check_config

    loaded = check_config(getattr(args, "config", None))
    config = loaded.unwrap()  # a broken config: every problem with its file:line
    label = str(loaded.path) if loaded.document is not None else "built-in defaults"
    facts = inspect_setup(config, label, application_id=args.application_id)
    if args.json:
        print(json.dumps(as_json(facts), indent=2))
    else:
        print(render_text(facts))
    return 0 if facts.ok else 1
