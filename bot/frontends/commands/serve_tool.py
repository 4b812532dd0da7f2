"""``glyphoxa serve-tool NAME [--http HOST:PORT [--bearer-token-env VAR]]``: one built-in tool
server over MCP stdio or streamable HTTP.

Lets any MCP host (another bot, an IDE, the MCP inspector, or a Glyphoxa on another machine) use
Glyphoxa's dice, rules, memory and other tools; the context (campaign folder, sandbox, memory
database, SRD) comes from glyphoxa.yaml.
"""

from __future__ import annotations

import argparse
import os
import sys

from bot.frontends.commands._options import Subcommands, add_campaign_option, load_config
from tools.builtin import SERVER_NAMES

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "serve-tool",
        help="serve a built-in tool server (dice, rules, ...) over MCP stdio or HTTP",
        description="Serve one built-in tool server over MCP stdio, or streamable HTTP with "
        "--http (the endpoint is http://HOST:PORT/mcp). The campaign folder, sandbox, memory "
        "database and SRD come from glyphoxa.yaml.",
    )
    parser.add_argument(
        "name", choices=SERVER_NAMES, metavar="NAME", help="one of: " + ", ".join(SERVER_NAMES)
    )
    add_campaign_option(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting of glyphoxa.yaml's tools: section (or memory_url), "
        "e.g. rules_db=/tmp/rules.db",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve over MCP streamable HTTP instead of stdio, e.g. 127.0.0.1:8765 (port 0: any)",
    )
    parser.add_argument(
        "--bearer-token-env",
        metavar="VAR",
        help="require 'Authorization: Bearer <token>' with the token read from this environment "
        "variable (needed to listen on a non-loopback address)",
    )
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    from bot.telemetry.logging_setup import configure_logging
    from campaigns.basics import GlyphoxaError
    from tools.builtin import build_tool_context, create_server
    from tools.builtin.serve import serve_stdio
    from tools.settings import override, set_option_values

    config = load_config(args)
    configure_logging(
        config.logging, verbose=getattr(args, "verbose", False), console_level="WARNING"
    )
    tools_config, memory_url = override(
        config.tools,
        set_option_values(args.set),
        memory_url=config.memory.url,
        origin=lambda key: f"--set {key}",
    )
    ctx = build_tool_context(tools_config, campaign_dir=config.campaign.path, memory_url=memory_url)
    if args.http is None:
        if args.bearer_token_env:
            raise GlyphoxaError("--bearer-token-env only applies with --http")
        await serve_stdio(create_server(args.name, ctx))
        return 0
    from tools.builtin.serve_http import parse_listen_address, serve_http

    host, port = parse_listen_address(args.http)
    token = None
    if args.bearer_token_env:
        token = os.environ.get(args.bearer_token_env, "")
        if not token:
            raise GlyphoxaError(f"environment variable {args.bearer_token_env} is empty or unset")

    def ready(url: str) -> None:
        print(f"serving {args.name} over MCP streamable HTTP at {url}", file=sys.stderr, flush=True)

    await serve_http(create_server(args.name, ctx), host, port, bearer_token=token, on_ready=ready)
    return 0
