"""Standalone entry point: run one built-in server over MCP stdio.

Options (or environment variables) give the server what it needs without glyphoxa.yaml; the
``glyphoxa serve-tool NAME`` command builds the same context from the config file instead.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from campaigns.basics import GlyphoxaError
from tools.builtin import SERVER_NAMES, create_server
from tools.builtin.serve import serve_stdio
from tools.spec import ToolContext

__all__ = ["build_context", "main"]

log = logging.getLogger(__name__)

_ENV_SETTINGS = {
    "srd_path": "GLYPHOXA_SRD_PATH",
    "rules_db": "GLYPHOXA_RULES_DB",
    "memory_url": "GLYPHOXA_MEMORY_URL",
    "web_search_backend": "GLYPHOXA_WEB_SEARCH_BACKEND",
    "web_search_url": "GLYPHOXA_WEB_SEARCH_URL",
    "web_search_api_key": "GLYPHOXA_WEB_SEARCH_API_KEY",
    "image_output_dir": "GLYPHOXA_IMAGE_OUTPUT_DIR",
    "image_base_url": "GLYPHOXA_IMAGE_BASE_URL",
    "image_api_key": "GLYPHOXA_IMAGE_API_KEY",
    "image_model": "GLYPHOXA_IMAGE_MODEL",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.builtin",
        description="Serve a Glyphoxa built-in tool server over MCP stdio.",
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


def build_context(campaign: str | None, sandbox: str | None, pairs: Sequence[str]) -> ToolContext:
    """A ``ToolContext`` from options, falling back to ``GLYPHOXA_*`` environment variables."""
    settings: dict[str, object] = {}
    for key, env in _ENV_SETTINGS.items():
        if os.environ.get(env):
            settings[key] = os.environ[env]
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise GlyphoxaError(f"--set expects KEY=VALUE, got {pair!r}")
        settings[key.strip()] = value
    hosts = settings.get("fetch_allow_hosts")
    if isinstance(hosts, str):
        settings["fetch_allow_hosts"] = [h.strip() for h in hosts.split(",") if h.strip()]
    campaign = campaign or os.environ.get("GLYPHOXA_CAMPAIGN_DIR")
    sandbox = sandbox or os.environ.get("GLYPHOXA_SANDBOX_DIR")
    return ToolContext(
        campaign_dir=Path(campaign) if campaign else None,
        sandbox_dir=Path(sandbox) if sandbox else None,
        settings=settings,
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
