"""``glyphoxa serve-tool NAME``: run one built-in tool server over MCP stdio.

Lets any MCP host (another bot, an IDE, the MCP inspector) use Glyphoxa's dice, rules, memory and
other tools; the context (campaign folder, sandbox, memory database, SRD) comes from glyphoxa.yaml.
"""

from __future__ import annotations

import argparse
from typing import Any

from tools.builtin import SERVER_NAMES, build_tool_context, create_server
from tools.builtin.serve import serve_stdio
from tools.builtin.standalone import build_context

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "serve-tool",
        help="serve a built-in tool server (dice, rules, ...) over MCP stdio",
        description="Serve one built-in tool server over MCP stdio.",
    )
    parser.add_argument("name", choices=SERVER_NAMES, metavar="NAME", help=", ".join(SERVER_NAMES))
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a tool setting, e.g. rules_db=/tmp/rules.db",
    )
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    from bot.config_loader import load_config
    from bot.logging_setup import configure_logging

    config = load_config(args.config)
    configure_logging(
        config.logging, verbose=getattr(args, "verbose", False), console_level="WARNING"
    )
    ctx = build_tool_context(
        config.tools, campaign_dir=config.campaign.path, memory_url=config.memory.url
    )
    overrides = build_context(None, None, args.set)
    ctx.settings.update(overrides.settings)
    await serve_stdio(create_server(args.name, ctx))
    return 0
