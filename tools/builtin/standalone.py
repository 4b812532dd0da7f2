"""Standalone entry point: run one built-in server over MCP stdio, with no glyphoxa.yaml.

``python -m tools.builtin NAME`` starts with the defaults of glyphoxa.yaml's ``tools:`` section,
overridden by ``GLYPHOXA_<KEY>`` environment variables (``GLYPHOXA_SRD_PATH``,
``GLYPHOXA_IMAGE_MODEL``, ``GLYPHOXA_MEMORY_URL``, ...), then by ``--set KEY=VALUE`` and
``--sandbox``. Every value is validated as glyphoxa.yaml's would be (``tools.settings.override``)
before the server starts, so a bad one stops it with one line naming the variable or option.
``glyphoxa serve-tool NAME`` serves the same tools with glyphoxa.yaml's values.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from campaigns.basics import GlyphoxaError
from tools.builtin import SERVER_NAMES, build_tool_context, create_server
from tools.builtin.serve import serve_stdio
from tools.config import BuiltinToolsConfig
from tools.settings import environ_values, override, set_option_values
from tools.spec import ToolContext

__all__ = ["build_context", "main"]

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.builtin",
        description="Serve a Glyphoxa built-in tool server over MCP stdio. Settings are the "
        "keys of glyphoxa.yaml's tools: section (and memory_url), from GLYPHOXA_<KEY> "
        "environment variables or --set.",
    )
    parser.add_argument("server", choices=SERVER_NAMES)
    parser.add_argument("--campaign", help="campaign folder (env GLYPHOXA_CAMPAIGN_DIR)")
    parser.add_argument("--sandbox", help="file sandbox folder (env GLYPHOXA_SANDBOX_DIR)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a tool setting, e.g. srd_path=/data/srd or fetch_allow_hosts=a,b",
    )
    return parser


def build_context(
    campaign: str | None,
    sandbox: str | None,
    pairs: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> ToolContext:
    """A ``ToolContext`` from the options over ``GLYPHOXA_*`` environment variables."""
    env = os.environ if environ is None else environ
    config, memory_url = override(
        BuiltinToolsConfig(), environ_values(env), origin=lambda key: f"GLYPHOXA_{key.upper()}"
    )
    options = set_option_values(pairs)
    config, memory_url = override(
        config, options, memory_url=memory_url, origin=lambda key: f"--set {key}"
    )
    if sandbox:
        config, memory_url = override(
            config, {"sandbox_dir": sandbox}, memory_url=memory_url, origin=lambda _: "--sandbox"
        )
    return build_tool_context(
        config,
        campaign_dir=campaign or env.get("GLYPHOXA_CAMPAIGN_DIR") or None,
        memory_url=memory_url,
        environ=env,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.builtin NAME``: serve one built-in over stdio (``glyphoxa serve-tool``
    is the same for users)."""
    args = _parser().parse_args(argv)
    server_name = args.server
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        ctx = build_context(args.campaign, args.sandbox, args.set)
        asyncio.run(serve_stdio(create_server(server_name, ctx)))
    except GlyphoxaError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
