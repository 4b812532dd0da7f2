"""``glyphoxa tools list|call|calibrate``: inspect and exercise the tool host from a shell.

The host is built as the bot builds it: MCP servers from ``mcp:`` in glyphoxa.yaml and the
built-in servers; ``--npc`` shows or calls through that NPC's whitelist and budget, exactly as
its LLM would. ``list`` only looks: it writes no calibration and creates no database.
``list --json`` prints {"tools": [{"name", "server", "original", "tier", ...}], "servers":
{name: {"state", ...}}, "collisions": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from bot.frontends.commands._options import (
    TIER_NAMES,
    Subcommands,
    add_campaign_option,
    add_json_option,
    load_campaign,
    load_config,
    plain,
)

if TYPE_CHECKING:
    from campaigns.basics import Tier
    from tools.host import ToolInfo

__all__ = ["register", "tool_table"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "tools",
        help="list, call and calibrate tools (built-in and MCP)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(parser)
    actions = parser.add_subparsers(dest="tools_action", metavar="ACTION", required=True)

    def action(name: str, text: str) -> argparse.ArgumentParser:
        child: argparse.ArgumentParser = actions.add_parser(name, help=text, description=text)
        add_campaign_option(child, default=argparse.SUPPRESS)
        return child

    listing = action("list", "every tool with tier, latency and health")
    _scope_options(listing)
    add_json_option(listing, "the tools, servers and name collisions")
    listing.set_defaults(func=_list)

    call = action("call", "call one tool as an NPC would")
    call.add_argument("name", metavar="NAME", help="exposed tool name (see: glyphoxa tools list)")
    call.add_argument(
        "arguments",
        nargs="?",
        default="{}",
        metavar="ARGUMENTS",
        help='arguments as a JSON object, e.g. \'{"dice": "2d6"}\'',
    )
    _scope_options(call)
    call.set_defaults(func=_call)

    calibrate = action(
        "calibrate", "probe safe (idempotent/read-only) tools and store their latency"
    )
    calibrate.add_argument("--rounds", type=int, default=5, help="calls per tool (default 5)")
    add_json_option(calibrate, "the measured tools")
    calibrate.set_defaults(func=_calibrate)


def _scope_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--npc", metavar="NAME", help="apply this NPC's tool whitelist and budget")
    parser.add_argument(
        "--tier",
        choices=TIER_NAMES,
        help="budget tier (default: the NPC's budget_tier; without --npc, every tool)",
    )


def _scope(args: argparse.Namespace, config: Any) -> tuple[list[str], Tier, str]:
    """Whitelist, tier and caller name for ``--npc``/``--tier``."""
    from campaigns.basics import GlyphoxaError, Tier

    npc_name = args.npc
    tier = Tier.parse(args.tier) if args.tier else None
    if npc_name is None:
        return ["*"], tier if tier is not None else Tier.DEEP, "cli"
    campaign = load_campaign(args, config)
    npc = campaign.find_npc(npc_name)
    if npc is None:
        known = ", ".join(sorted(campaign.npcs)) or "none"
        raise GlyphoxaError(f"no NPC named {npc_name!r} in {config.campaign.path}; known: {known}")
    return list(npc.tools), tier if tier is not None else npc.budget_tier, npc.name


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _row(info: ToolInfo) -> list[str]:
    tier = info.tier.label if info.within_budget else "over"
    if info.demoted:
        tier += "*"
    rate = "-" if info.error_rate is None else f"{info.error_rate:.0%}"
    return [
        info.name,
        info.server,
        tier,
        f"{_fmt_ms(info.latency.estimated_duration_ms)}/{_fmt_ms(info.latency.max_duration_ms)}",
        f"{_fmt_ms(info.measured_p50_ms)}/{_fmt_ms(info.measured_p99_ms)}",
        rate,
        "needs tasks" if info.needs_tasks else "up" if info.healthy else "DOWN",
    ]


def tool_table(tools: list[ToolInfo]) -> str:
    """Tools as an aligned text table (name, server, tier, latency, errors, health)."""
    header = ["NAME", "SERVER", "TIER", "DECL p50/max", "MEAS p50/p99", "ERR", "HEALTH"]
    rows = [header] + [_row(t) for t in tools]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


async def _list(args: argparse.Namespace) -> int:
    from bot.frontends.tool_inspection import cli_tool_host

    config = load_config(args)
    whitelist, tier, _ = _scope(args, config)
    async with cli_tool_host(config) as host:
        if args.npc is None and args.tier is None:
            tools = host.list_tools()
        else:
            tools = host.visible_tools(tuple(whitelist), tier)
        servers = host.server_states()
        collisions = [c.describe() for c in host.collisions]
    if args.json:
        tool_rows = [t.as_dict() for t in tools]
        document = {"tools": tool_rows, "servers": servers, "collisions": collisions}
        print(json.dumps(document, indent=2))
        return 0
    print(tool_table(tools) if tools else "(no tools)")
    for name, state in servers.items():
        if state["state"] != "up":
            print(f"server {name}: {state['state']} ({state['last_error']})", file=sys.stderr)
    # Name collisions are reported once, by the host's own warning as they happen.
    return 0


async def _call(args: argparse.Namespace) -> int:
    from bot.frontends.tool_inspection import cli_tool_host
    from campaigns.basics import GlyphoxaError

    config = load_config(args)
    whitelist, tier, npc = _scope(args, config)
    try:
        arguments = json.loads(args.arguments)
    except ValueError as error:
        raise GlyphoxaError(f"arguments must be a JSON object: {error}") from None
    if not isinstance(arguments, dict):
        raise GlyphoxaError('arguments must be a JSON object, e.g. \'{"dice": "2d6"}\'')
    async with cli_tool_host(config) as host:
        if host.get_tool(args.name) is None:
            known = ", ".join(t.name for t in host.list_tools()) or "none"
            raise GlyphoxaError(f"no tool named {args.name!r}; known tools: {known}")
        result = await host.call(args.name, arguments, whitelist=whitelist, tier=tier, npc=npc)
    print(result.content)
    print(f"[{result.status} in {result.duration_ms:.1f} ms]", file=sys.stderr)
    return 1 if result.is_error else 0


async def _calibrate(args: argparse.Namespace) -> int:
    from bot.frontends.tool_inspection import cli_tool_host
    from campaigns.basics import GlyphoxaError

    if args.rounds < 1:
        raise GlyphoxaError("--rounds must be at least 1")
    config = load_config(args)
    async with cli_tool_host(config, persist=True) as host:
        probed = await host.calibrate(rounds=args.rounds)
        environment = host.calibration.environment
    if args.json:
        path = config.tools.calibration_path
        rows = [t.as_dict() for t in probed]
        print(json.dumps({"environment": environment, "path": path, "tools": rows}, indent=2))
        return 0
    print(f"environment {environment}; saved to {config.tools.calibration_path}")
    none = "(no idempotent or read-only tool callable without args)"
    print(tool_table(probed) if probed else none)
    return 0
