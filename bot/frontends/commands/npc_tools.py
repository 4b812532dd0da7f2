"""``glyphoxa tier``, ``glyphoxa address`` and ``glyphoxa chat``: the NPC brain from a shell.

``tier`` shows which latency tier a line would get and which tools the NPC would then see;
``address`` shows which NPC(s) would answer a line and why; ``chat`` is a text conversation
with one NPC through the configured LLM and tools (starting the bundled llama.cpp server when
``providers.llm.name`` is ``local``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from bot.frontends.commands._options import (
    TIER_NAMES,
    Subcommands,
    add_campaign_option,
    add_json_option,
    load_campaign,
    load_config,
)

if TYPE_CHECKING:
    from npcs.schema import NpcDefinition
    from npcs.tier_selector import TierSelector

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    tier = sub.add_parser("tier", help="which latency tier a line gets, and the tools it allows")
    tier.add_argument("text", help="what a player says")
    tier.add_argument("--npc", metavar="NAME", help="apply this NPC's budget and whitelist")
    tier.add_argument("--override", choices=TIER_NAMES, help="a DM override of the tier")
    tier.add_argument("--queue", type=int, default=0, help="players waiting (queue depth)")
    tier.add_argument(
        "--first-turn",
        action="store_true",
        help="the line opens a conversation with --npc (default: a conversation is going on)",
    )
    tier.add_argument(
        "--explain", action="store_true", help="show how each rule judged the line, in order"
    )
    add_campaign_option(tier)
    add_json_option(tier, "the decision and the visible tools")
    tier.set_defaults(func=_tier)

    address = sub.add_parser("address", help="which NPC(s) would answer a line, and why")
    address.add_argument("text", help="what a player says (a final transcript)")
    add_campaign_option(address)
    address.add_argument("--dm", action="store_true", help="the line is said by the DM")
    address.add_argument(
        "--character",
        action="append",
        default=[],
        metavar="NAME",
        help="a player's character at the table (repeatable; campaign.yaml's characters count)",
    )
    add_json_option(address, "the decision")
    address.set_defaults(func=_address)

    chat = sub.add_parser("chat", help="talk to an NPC in text through the configured LLM")
    chat.add_argument("--npc", metavar="NAME", required=True, help="the NPC to talk to")
    add_campaign_option(chat)
    chat.add_argument("--speaker", default="Player", help="your name at the table")
    chat.set_defaults(func=_chat)


# -- shared loading ----------------------------------------------------------------------------


def _find_npc(campaign: Any, name: str) -> NpcDefinition:
    from campaigns.basics import GlyphoxaError

    npc = campaign.find_npc(name)
    if npc is None:
        known = ", ".join(sorted(campaign.npcs)) or "none"
        raise GlyphoxaError(f"no NPC named {name!r} in {campaign.path}; known: {known}")
    return npc  # type: ignore[no-any-return]


# -- glyphoxa tier -----------------------------------------------------------------------------


async def _tier(args: argparse.Namespace) -> int:
    from bot.frontends.tool_inspection import cli_tool_host
    from npcs.tier_selector import TierSelector

    config = load_config(args)
    selector = TierSelector(config.tiers)
    npc = _find_npc(load_campaign(args, config), args.npc) if args.npc else None
    now = time.monotonic()
    if args.override:
        selector.set_override(args.override, npc=npc.name if npc else None, now=now)
    decision, explanation = selector.explain(
        args.text, npc=npc, queue_depth=args.queue, now=now, first_turn=args.first_turn
    )
    async with cli_tool_host(config) as host:
        whitelist = tuple(npc.tools) if npc is not None else ("*",)
        visible = [info.name for info in host.visible_tools(whitelist, decision.tier)]
    if args.json:
        print(
            json.dumps(
                {
                    **decision.as_dict(),
                    "npc": npc.name if npc else None,
                    "visible_tools": visible,
                    **({"explain": explanation} if args.explain else {}),
                },
                indent=2,
            )
        )
        return 0
    print(f"selected:  {decision.selected.label}")
    print(
        f"effective: {decision.tier.label}"
        + (f" (budget of {npc.name})" if decision.capped and npc else "")
    )
    print(f"reason:    {decision.reason}")
    if args.explain:
        print("rules, in order:")
        for line in explanation:
            print(f"  {line}")
    scope = f"{npc.name}'s whitelist" if npc is not None else "all tools"
    print(f"tools ({scope} at {decision.tier.label}): {', '.join(visible) or '(none)'}")
    return 0


# -- glyphoxa address --------------------------------------------------------------------------


def _address(args: argparse.Namespace) -> int:
    from npcs.addressing import AddressDetector

    config = load_config(args)
    campaign = load_campaign(args, config)
    detector = AddressDetector(
        campaign.npcs,
        continuation_window_s=config.tiers.continuation_window_s,
        characters=[*campaign.meta.characters.values(), *args.character],
    )
    decision = detector.detect("DM" if args.dm else "Player", args.text, 0.0, is_dm=args.dm)
    if args.json:
        print(json.dumps(decision.as_dict(), indent=2))
        return 0
    print(f"answers: {', '.join(decision.npcs) if decision.npcs else '(nobody)'}")
    print(f"reason:  {decision.reason}")
    for mention in decision.mentions:
        role = "spoken to" if mention.vocative else "talked about"
        print(f"  - {mention.npc}: '{mention.matched}' ({mention.how}, {role}: {mention.why})")
    if decision.puppet_text is not None:
        print(f"puppet:  {decision.puppet_text}")
    return 0


# -- glyphoxa chat -----------------------------------------------------------------------------


async def _chat(args: argparse.Namespace) -> int:
    from bot.frontends.tool_inspection import cli_tool_host
    from bot.table.assembly.engines import open_engines
    from campaigns.basics import GlyphoxaError
    from npcs.schema import EngineKind
    from npcs.tier_selector import TierSelector

    config = load_config(args)
    campaign = load_campaign(args, config)
    npc = _find_npc(campaign, args.npc)
    provider = config.providers.llm
    if provider.name != "local" and not provider.model:
        raise GlyphoxaError("providers.llm.model is empty; name the chat model to use")
    async with contextlib.AsyncExitStack() as stack:
        host = await stack.enter_async_context(cli_tool_host(config))
        engines = await open_engines(
            config, host, stack, say=lambda line: print(f"{line}...", file=sys.stderr), npcs=[npc]
        )
        # text in, text out: a realtime NPC talks through the cascaded engine here
        engine = engines.cascaded if npc.engine is EngineKind.REALTIME else engines.for_npc(npc)
        await _repl(npc, engine, TierSelector(config.tiers), args.speaker)
    return 0


async def _repl(npc: NpcDefinition, engine: Any, selector: TierSelector, speaker: str) -> None:
    from npcs.context import SceneLine
    from npcs.engines import Filler, Sentence, ToolsUsed, TurnDone, TurnRequest

    scene: list[SceneLine] = []
    print(
        f"Talking to {npc.name} ({npc.engine.value}, budget {npc.budget_tier.label}). "
        "Type /tier LEVEL|auto to override, /quit to leave."
    )
    if npc.greeting:
        print(f"{npc.name}: {npc.greeting}")
    while True:
        print("> ", end="", flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            print()
            return
        text = line.strip()
        if not text:
            continue
        if text in {"/quit", "/exit"}:
            return
        now = time.monotonic()
        if text.startswith("/tier"):
            level = text.removeprefix("/tier").strip() or "auto"
            selector.set_override(level, npc=npc.name, now=now)
            print(f"[tier override: {level}]")
            continue
        decision = selector.select(text, npc=npc, now=now)
        selector.commit(decision, npc=npc.name, now=now)
        print(f"[{decision.tier.label}: {decision.reason}]", file=sys.stderr)
        request = TurnRequest(npc, speaker, text, decision.tier, scene=list(scene))
        scene.append(SceneLine(speaker, text, at=now))
        line_open = False  # sentences of one answer share a line, as they are spoken
        async with contextlib.aclosing(engine.respond(request)) as events:
            async for event in events:
                if isinstance(event, Sentence):
                    lead = " " if line_open else f"{npc.name}: "
                    print(f"{lead}{event.text}", end="", flush=True)
                    line_open = True
                    continue
                if line_open:
                    print(flush=True)
                    line_open = False
                if isinstance(event, Filler):
                    print(f"{npc.name}: {event.text} (filler)", flush=True)
                elif isinstance(event, ToolsUsed):
                    for result in event.report.results:
                        print(
                            f"  [tool {result.name}: {result.status}, {result.duration_ms:.0f} ms]",
                            file=sys.stderr,
                        )
                elif isinstance(event, TurnDone):
                    scene.append(SceneLine(npc.name, event.text, npc=npc.name, at=time.monotonic()))
