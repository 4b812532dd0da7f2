"""What one NPC's LLM sees, gathered from the parts the table itself uses.

``glyphoxa npc show`` prints it. Nothing here rebuilds a rule: the system prompt comes from the
engines' prompt builder (``npcs.context``), the tools from the tool host's view through the
engines' ``offered_tools`` (whitelist, health and the tier's latency budget, as resolved by
the registry), the tier from the NPC's budget, and the campaign notes from the table's
``EntityLookup`` over the campaign memory. Building a view writes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig
    from campaigns.basics import Tier
    from npcs.campaign import Campaign
    from npcs.schema import NpcDefinition
    from tools.host import ToolHost

__all__ = ["MemoryView", "NpcView", "TierView", "build_npc_view", "npc_summary"]

_PLAYER_WORDS = "<what the player says>"


@dataclass(slots=True)
class TierView:
    """The NPC's turn when a player's line selects ``selected``."""

    selected: str
    effective: str
    """The tier the turn runs at: the selected one, capped by the NPC's budget_tier."""
    capped: bool
    tools: list[dict[str, Any]]
    """As offered to the LLM (name, description, parameters) plus the server and tool tier."""
    system_prompt: str


@dataclass(slots=True)
class MemoryView:
    """The campaign memory the NPC's notes and memory tools read."""

    database: str
    """The configured URL (password hidden)."""
    exists: bool
    """False before the first session: nothing recorded yet."""
    sessions: int
    approved_facts: int


@dataclass(slots=True)
class NpcView:
    """Everything ``npc show`` reports about one NPC."""

    name: str
    file: str | None
    aliases: list[str]
    engine: str
    engine_at_table: str
    """The engine that answers with this config (realtime falls back without a provider)."""
    budget_tier: str
    address_only: bool
    whitelist: list[str]
    tiers: list[TierView]
    turn_message: str
    """The user message of a turn, with the player's words as a placeholder."""
    campaign_notes: list[dict[str, Any]]
    """Entities whose note joins the prompt when a player names them: name, type, the words
    that trigger it, and the note line as the prompt shows it."""
    memory: MemoryView
    opener_instruction: str | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The documented ``npc show --json`` shape."""
        return asdict(self)


def npc_summary(npc: NpcDefinition, file: str | None) -> dict[str, Any]:
    """One row of ``npc list`` (also its ``--json`` item)."""
    return {
        "name": npc.name,
        "file": file,
        "aliases": list(npc.aliases),
        "engine": npc.engine.value,
        "budget_tier": npc.budget_tier.label,
        "voice": {"provider": npc.voice.provider, "voice": npc.voice.voice},
        "tools": list(npc.tools),
        "address_only": npc.address_only,
    }


async def build_npc_view(
    config: GlyphoxaConfig,
    campaign: Campaign,
    npc: NpcDefinition,
    host: ToolHost,
    memory: Any,
    *,
    memory_exists: bool,
    tiers: list[Tier],
) -> NpcView:
    """Assemble the view of ``npc`` at each of ``tiers`` from a started host and an open store."""
    from npcs.context import build_messages
    from npcs.schema import EngineKind

    realtime = npc.engine is EngineKind.REALTIME
    engine_at_table = npc.engine.value
    warnings = []
    if realtime and config.providers.realtime is None:
        engine_at_table = EngineKind.CASCADED.value
        warnings.append(
            "engine realtime, but providers.realtime is not configured: the cascaded engine answers"
        )
        realtime = False
    views = [_tier_view(npc, host, tier, realtime=realtime) for tier in tiers]
    if npc.tools and not any(view.tools for view in views):
        warnings.append(
            f"tools: {', '.join(npc.tools)} give the LLM no tool at these tiers "
            "(see glyphoxa tools list and glyphoxa check)"
        )
    turn = build_messages(npc, "Player", _PLAYER_WORDS)[1]["content"]
    opener = npc.cascade.opener_instruction if npc.engine is EngineKind.SENTENCE_CASCADE else None
    return NpcView(
        name=npc.name,
        file=str(campaign.npc_files[npc.name]) if npc.name in campaign.npc_files else None,
        aliases=list(npc.aliases),
        engine=npc.engine.value,
        engine_at_table=engine_at_table,
        budget_tier=npc.budget_tier.label,
        address_only=npc.address_only,
        whitelist=list(npc.tools),
        tiers=views,
        turn_message=str(turn),
        campaign_notes=await _notes(campaign, memory),
        memory=await _memory_view(config, memory, exists=memory_exists),
        opener_instruction=opener,
        warnings=warnings,
    )


def _tier_view(npc: NpcDefinition, host: ToolHost, selected: Tier, *, realtime: bool) -> TierView:
    from npcs.context import build_system_prompt
    from npcs.engines.chat_wire import offered_tools

    effective = min(selected, npc.budget_tier)
    offered = offered_tools(host, tuple(npc.tools), effective)
    tools = []
    for tool in offered:
        function = tool["function"]
        info = host.get_tool(function["name"])
        tools.append(
            {
                "name": function["name"],
                "server": info.server if info is not None else None,
                "tier": info.tier.label if info is not None else None,
                "description": function.get("description", ""),
                "parameters": function.get("parameters", {}),
            }
        )
    # The realtime engine declares its persona once, for every tier: tools or not.
    has_tools = bool(npc.tools) if realtime else bool(offered)
    return TierView(
        selected=selected.label,
        effective=effective.label,
        capped=effective < selected,
        tools=tools,
        system_prompt=build_system_prompt(npc, has_tools=has_tools),
    )


async def _notes(campaign: Campaign, memory: Any) -> list[dict[str, Any]]:
    from bot.table.session.entities import EntityLookup

    lookup = EntityLookup(campaign, memory, wait_s=30.0)
    try:
        notes = []
        for entity in campaign.entities.entities:
            triggers = [form for form in (entity.name, *entity.aliases) if len(form) >= 3]
            note = await lookup.snapshot(entity.name) if triggers else None
            notes.append(
                {
                    "id": entity.key,
                    "name": entity.name,
                    "type": entity.type,
                    "triggers": triggers,
                    "note": note,
                }
            )
        return notes
    finally:
        lookup.close()


async def _memory_view(config: GlyphoxaConfig, memory: Any, *, exists: bool) -> MemoryView:
    from sqlalchemy.engine import make_url

    try:
        database = make_url(config.memory.url).render_as_string(hide_password=True)
    except Exception:  # MemoryStore.open already refused a bad URL; this is only a label
        database = "<invalid url>"
    sessions = await memory.list_sessions() if exists else []
    facts = await memory.list_facts("approved") if exists else []
    return MemoryView(database, exists, len(sessions), len(facts))
