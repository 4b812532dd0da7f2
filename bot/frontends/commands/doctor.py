"""``glyphoxa doctor [--only NAMES] [--discord [--online]] [--json]``: ready for a table?

Checks, by really running each part, everything the configured table needs: config and
campaign, libopus, espeak-ng, every NPC voice, the VAD, the speech recognizer, the LLM (a chat
and a tool call), campaign memory, the built-in tools, each MCP server and the Discord token
(offline, in the words of ``glyphoxa discord setup``; ``--online`` also asks Discord).
One line per check with the time it took and, for a failure, the fix; exit code 0 only when
every check passed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bot.frontends.commands._options import Subcommands, add_campaign_option, plain

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "doctor",
        help="check every part the configured table needs, by running it",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(parser)
    parser.add_argument(
        "--only",
        default=None,
        metavar="NAMES",
        help="comma-separated checks (config, campaign, opus, espeak, voices, vad, stt, llm, "
        "memory, tools, mcp, discord-token, discord-api)",
    )
    parser.add_argument(
        "--discord", action="store_true", help="a missing DISCORD_TOKEN fails (about to run)"
    )
    parser.add_argument(
        "--online",
        action="store_true",
        help="also ask Discord's API whether it accepts the token and the bot is in the "
        "configured servers with its permissions (implies --discord; needs the network)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    from bot.frontends.doctor import CHECK_NAMES, diagnose
    from bot.frontends.doctor.runner import Outcome
    from campaigns.basics import GlyphoxaError

    only = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = sorted(only - set(CHECK_NAMES))
        if unknown:
            raise GlyphoxaError(
                f"unknown check(s) {', '.join(unknown)}; choose from {', '.join(CHECK_NAMES)}"
            )
    started = time.monotonic()

    def printer(outcome: Outcome) -> None:
        print(outcome.line(), flush=True)
        for warning in outcome.warnings:  # the campaign's YAML warnings, as check prints them
            print(warning, file=sys.stderr, flush=True)

    outcomes = await diagnose(
        args.config,
        only=only,
        discord=args.discord,
        online=args.online,
        on_outcome=None if args.json else printer,
        campaign=args.campaign,
    )
    failed = [o for o in outcomes if o.status == "FAIL"]
    elapsed = time.monotonic() - started
    if args.json:
        print(json.dumps({"ok": not failed, "seconds": round(elapsed, 2),
                          "checks": [o.as_dict() for o in outcomes]}, indent=2))  # fmt: skip
    else:
        passed = sum(o.status == "PASS" for o in outcomes)
        skipped = sum(o.status == "SKIP" for o in outcomes)
        summary = f"doctor: {passed} passed, {len(failed)} failed, {skipped} skipped"
        summary += f" in {elapsed:.1f} s"
        if failed:
            summary += f"; FAIL: {', '.join(o.name for o in failed)}"
        print(summary, file=sys.stdout)
    return 1 if failed else 0
