"""``glyphoxa npc list`` and ``glyphoxa npc show NAME [--tier T]``: the NPCs as their LLM sees them.

``show`` prints, for each tier a player's line may select (or only --tier T), the tier the turn
runs at (capped by the NPC's budget_tier), the tools the LLM is offered and the system prompt as
the engine builds it; then the user message of a turn, the campaign notes that join the prompt
when a player names an entity, and the campaign memory the NPC's memory tools search. It reads
the config, the campaign, the tool calibration and the memory, and writes nothing.

--json: ``list`` prints [{"name", "file", "aliases", "engine", "budget_tier", "voice",
"tools", "address_only"}]; ``show`` prints {"name", "file", "aliases", "engine",
"engine_at_table", "budget_tier", "address_only", "whitelist", "tiers": [{"selected",
"effective", "capped", "tools": [{"name", "server", "tier", "description", "parameters"}],
"system_prompt"}], "turn_message", "campaign_notes": [{"id", "name", "type", "triggers",
"note"}], "memory": {"database", "exists", "sessions", "approved_facts"},
"opener_instruction", "warnings"}.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
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
    from bot.frontends.npc_view import NpcView
    from campaigns.yamlio import Issue

__all__ = ["register"]


def register(group: Subcommands) -> None:
    description = plain(__doc__)
    listing = group.add_parser(
        "list",
        help="the campaign's NPCs: file, engine, budget, tools",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_campaign_option(listing, default=argparse.SUPPRESS)
    add_json_option(listing, "the NPCs")
    listing.set_defaults(func=_list)

    show = group.add_parser(
        "show",
        help="what an NPC's LLM sees: prompt, tools per tier, notes and memory",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument("name", metavar="NAME", help="the NPC's name or an alias")
    show.add_argument(
        "--tier", choices=TIER_NAMES, help="only the turn at this tier (default: every tier)"
    )
    add_campaign_option(show, default=argparse.SUPPRESS)
    add_json_option(show, "the whole view")
    show.set_defaults(func=_show)


def _list(args: argparse.Namespace) -> int:
    from bot.frontends.npc_view import npc_summary

    campaign = load_campaign(args, load_config(args))
    rows = [
        npc_summary(npc, str(campaign.npc_files.get(name)) if name in campaign.npc_files else None)
        for name, npc in sorted(campaign.npcs.items(), key=lambda item: item[0].casefold())
    ]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no NPCs in {campaign.path}; add one with: glyphoxa npc new NAME")
        return 0
    header = ["NAME", "ENGINE", "BUDGET", "TOOLS", "FILE"]
    table = [header] + [
        [
            row["name"] + (f" (aka {', '.join(row['aliases'])})" if row["aliases"] else ""),
            row["engine"],
            row["budget_tier"],
            ", ".join(row["tools"]) or "-",
            row["file"] or "-",
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


async def _show(args: argparse.Namespace) -> int:
    from bot.frontends.npc_view import build_npc_view
    from bot.frontends.tool_inspection import cli_tool_host
    from bot.table.assembly.memory import memory_url_for_reading, open_memory
    from bot.table.assembly.table import builtin_servers_for
    from campaigns.basics import GlyphoxaError, Tier

    config = load_config(args)
    found: list[Issue] = []  # printed on stderr by load_campaign; this NPC's join the view's
    campaign = load_campaign(args, config, warnings=found)
    npc = campaign.find_npc(args.name)
    if npc is None:
        known = ", ".join(sorted(campaign.npcs)) or "none"
        raise GlyphoxaError(f"no NPC named {args.name!r} in {campaign.path}; known: {known}")
    tiers = [Tier.parse(args.tier)] if args.tier else list(Tier)
    url, missing = memory_url_for_reading(config.memory.url)
    servers = builtin_servers_for(campaign.npcs.values())  # as the table starts them
    seed = missing is not None  # only the in-memory stand-in: a real database is only read
    async with await open_memory(config, url=url, summarize=False, seed=seed) as memory:
        async with cli_tool_host(config, servers=servers) as host:
            view = await build_npc_view(
                config, campaign, npc, host, memory, memory_exists=missing is None, tiers=tiers
            )
    own = str(campaign.npc_files.get(npc.name, ""))
    view.warnings[:0] = [str(w) for w in found if own and w.file == own]
    if args.json:
        print(json.dumps(view.as_dict(), indent=2, ensure_ascii=False))
        return 0
    _print_view(view)
    return 0


def _print_view(view: NpcView) -> None:
    aka = f" (aka {', '.join(view.aliases)})" if view.aliases else ""
    print(f"{view.name}{aka}: {view.file or '-'}")
    engine = view.engine
    if view.engine_at_table != view.engine:
        engine += f" (answers with {view.engine_at_table})"
    only = "; answers only when named" if view.address_only else ""
    print(f"engine: {engine}; budget_tier: {view.budget_tier}{only}")
    print(f"whitelist: {', '.join(view.whitelist) or '(none)'}")
    for warning in view.warnings:
        if ": warning: " not in warning:  # the file's YAML warnings were printed on loading
            print(f"warning: {warning}", file=sys.stderr)
    print("\n== tools offered, by the tier a player's line selects:")
    prompts: dict[str, list[str]] = {}
    described: dict[str, dict[str, Any]] = {}
    for tier in view.tiers:
        runs = f"runs at {tier.effective}" + (", capped by budget_tier" if tier.capped else "")
        names = ", ".join(tool["name"] for tool in tier.tools) or "(none)"
        print(f"  {tier.selected:<8} {runs:<38} {names}")
        described.update((tool["name"], tool) for tool in tier.tools)
        prompts.setdefault(tier.system_prompt, []).append(tier.selected)
    for name, tool in described.items():
        lines = (tool["description"] or "").strip().splitlines()
        summary = lines[0] if lines else ""
        print(f"  - {name} ({tool['server']}, {tool['tier']}): {summary}")
    for prompt, tiers in prompts.items():
        print(f"\n== system prompt ({', '.join(tiers)}):")
        print(textwrap.indent(prompt, "  "))
    if view.opener_instruction:
        print(f"\n== the opener (fast model) is also told:\n  {view.opener_instruction}")
    print("\n== each turn's user message (scene lines and campaign notes come first, when any):")
    print(textwrap.indent(view.turn_message, "  "))
    print("\n== campaign notes (join the prompt when a player names them):")
    if not view.campaign_notes:
        print("  (none: entities.yaml has no entities)")
    for note in view.campaign_notes:
        said = ", ".join(repr(t) for t in note["triggers"]) or "(name too short to match)"
        print(f"  {note['name']} [{note['type']}] on {said}")
        if note["note"]:
            print(f"    {note['note']}")
    memory = view.memory
    if memory.exists:
        held = f"{memory.sessions} sessions, {memory.approved_facts} approved facts"
    else:
        held = "nothing recorded yet (the first session creates it)"
    print(f"\n== memory the memory tools search: {memory.database}: {held}")
