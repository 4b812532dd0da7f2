"""``glyphoxa tools list|call|calibrate``: inspect and exercise the tool host from a shell.

The host is built exactly as the bot builds it: MCP servers from ``mcp:`` in glyphoxa.yaml and
the built-in servers from ``tools.builtin``; ``--npc`` applies that NPC's whitelist and budget.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from campaigns.errors import GlyphoxaError
from tools.host import ToolHost, ToolInfo
from tools.selection import selection_for
from tools.spec import BuiltinServer
from tools.tiers import Tier

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    parser = sub.add_parser("tools", help="list, call and calibrate tools (built-in and MCP)")
    actions = parser.add_subparsers(dest="tools_action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="every tool with tier, latency and health")
    _scope_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)

    call = actions.add_parser("call", help="call one tool as an NPC would")
    call.add_argument("name", help="exposed tool name (see `glyphoxa tools list`)")
    call.add_argument("arguments", nargs="?", default="{}", help="arguments as a JSON object")
    _scope_options(call)
    call.set_defaults(func=_call)

    calibrate = actions.add_parser(
        "calibrate", help="probe safe (idempotent/read-only) tools and store their latency"
    )
    calibrate.add_argument("--rounds", type=int, default=5, help="calls per tool (default 5)")
    calibrate.add_argument("--json", action="store_true", help="print JSON")
    calibrate.set_defaults(func=_calibrate)


def _scope_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--npc", metavar="NAME", help="apply this NPC's tool whitelist and budget")
    parser.add_argument(
        "--tier", metavar="T", type=_tier, help="budget tier: fast, standard or deep"
    )


def _tier(value: str) -> Tier:
    try:
        return Tier.parse(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _load_config(path: str | None) -> Any:
    try:
        from bot.config_loader import load_config
    except ModuleNotFoundError:  # foundation not landed yet: defaults only
        from bot.config import GlyphoxaConfig

        return GlyphoxaConfig()
    return load_config(path)


def _builtins(config: Any) -> list[BuiltinServer]:
    try:
        import tools.builtin as builtin
    except ModuleNotFoundError:
        print("note: built-in tools are not available in this build", file=sys.stderr)
        return []
    ctx = builtin.build_tool_context(
        config.tools, campaign_dir=config.campaign.path, memory_url=config.memory.url
    )
    servers: list[BuiltinServer] = []
    for name in builtin.SERVER_NAMES:
        try:
            servers.append(builtin.create_server(name, ctx))
        except ModuleNotFoundError as error:
            log.info("built-in server %s not available: %s", name, error)
    return servers


def _scope(config: Any, npc_name: str | None, tier: Tier | None) -> tuple[list[str], Tier, str]:
    """Whitelist, tier and caller name for ``--npc``/``--tier``."""
    if npc_name is None:
        return ["*"], tier if tier is not None else Tier.DEEP, "cli"
    from npcs.campaign import load_campaign

    campaign = load_campaign(config.campaign.path)
    npc = campaign.find_npc(npc_name)
    if npc is None:
        known = ", ".join(sorted(campaign.npcs)) or "none"
        raise GlyphoxaError(f"no NPC named {npc_name!r} in {config.campaign.path}; known: {known}")
    return list(npc.tools), tier if tier is not None else npc.budget_tier, npc.name


def _host(config: Any) -> ToolHost:
    ceilings = {tier: config.tiers.ceiling(tier) for tier in Tier}
    return ToolHost(
        config.mcp,
        builtins=_builtins(config),
        calibration_path=Path(config.tools.calibration_path),
        ceilings_ms=ceilings,
    )


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


def _table(tools: list[ToolInfo]) -> str:
    header = ["NAME", "SERVER", "TIER", "DECL p50/max", "MEAS p50/p99", "ERR", "HEALTH"]
    rows = [header] + [_row(t) for t in tools]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


async def _list(args: argparse.Namespace) -> int:
    config = _load_config(args.config)
    whitelist, tier, _ = _scope(config, args.npc, args.tier)
    async with _host(config) as host:
        tools = host.list_tools()
        if args.npc is not None:
            selection = selection_for(whitelist)
            tools = [t for t in tools if selection.allows(t.server, t.original_name, t.name)]
        if args.npc is not None or args.tier is not None:
            tools = [t for t in tools if t.within_budget and t.tier <= tier]
        servers = host.server_states()
        collisions = [c.describe() for c in host.collisions]
    if args.json:
        print(
            json.dumps(
                {
                    "tools": [t.as_dict() for t in tools],
                    "servers": servers,
                    "collisions": collisions,
                },
                indent=2,
            )
        )
        return 0
    print(_table(tools) if tools else "(no tools)")
    for name, state in servers.items():
        if state["state"] != "up":
            print(f"server {name}: {state['state']} ({state['last_error']})", file=sys.stderr)
    # Name collisions are reported once, by the host's own warning as they happen.
    return 0


async def _call(args: argparse.Namespace) -> int:
    config = _load_config(args.config)
    whitelist, tier, npc = _scope(config, args.npc, args.tier)
    try:
        arguments = json.loads(args.arguments)
    except ValueError as error:
        raise GlyphoxaError(f"arguments must be a JSON object: {error}") from None
    if not isinstance(arguments, dict):
        raise GlyphoxaError('arguments must be a JSON object, e.g. \'{"dice": "2d6"}\'')
    async with _host(config) as host:
        if host.get_tool(args.name) is None:
            known = ", ".join(t.name for t in host.list_tools()) or "none"
            raise GlyphoxaError(f"no tool named {args.name!r}; known tools: {known}")
        result = await host.call(args.name, arguments, whitelist=whitelist, tier=tier, npc=npc)
    print(result.content)
    print(f"[{result.status} in {result.duration_ms:.1f} ms]", file=sys.stderr)
    return 1 if result.is_error else 0


async def _calibrate(args: argparse.Namespace) -> int:
    if args.rounds < 1:
        raise GlyphoxaError("--rounds must be at least 1")
    config = _load_config(args.config)
    async with _host(config) as host:
        probed = await host.calibrate(rounds=args.rounds)
        environment = host.calibration.environment
    if args.json:
        print(
            json.dumps(
                {
                    "environment": environment,
                    "path": config.tools.calibration_path,
                    "tools": [t.as_dict() for t in probed],
                },
                indent=2,
            )
        )
        return 0
    print(f"environment {environment}; saved to {config.tools.calibration_path}")
    print(_table(probed) if probed else "(no idempotent or read-only tool callable without args)")
    return 0
