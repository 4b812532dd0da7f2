"""The tool host as the CLI builds it: the bot's servers and settings, for looking and trying.

``glyphoxa tools``, ``tier``, ``chat`` and ``npc show`` need the very host the bot runs (MCP
servers from ``mcp:``, the built-in servers, calibration from ``tools.calibration_path``), so
what they show is what an NPC's LLM gets. Looking must not change anything: a host opened with
``persist=False`` reads the calibration and the remembered tool listings but writes neither,
the memory tools read the configured database only if it exists (an in-memory one stands in
before the first session), and a rules index built from the SRD is not cached.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig
    from tools.host import ToolHost

__all__ = ["cli_tool_host"]

log = logging.getLogger(__name__)


def cli_tool_host(
    config: GlyphoxaConfig, *, servers: Sequence[str] | None = None, persist: bool = False
) -> ToolHost:
    """A (not yet started) ToolHost over the configured MCP servers and built-ins.

    Args:
        config: glyphoxa.yaml, its ``campaign.path`` the campaign the tools read.
        servers: Built-in servers to start (None: all of them).
        persist: Save calibration and tool listings (``tools call``, ``tools calibrate``);
            False for commands that only look.
    """
    from bot.table.assembly.memory import memory_url_for_reading
    from campaigns.basics import Tier
    from tools.builtin import build_tool_context, create_builtin_servers
    from tools.host import ToolHost

    memory_url, _missing = memory_url_for_reading(config.memory.url)
    context = build_tool_context(
        config.tools,
        campaign_dir=config.campaign.path,
        memory_url=memory_url,
        rules_cache=persist,  # an index built from the SRD: cached only when persisting
    )
    return ToolHost(
        config.mcp,
        builtins=create_builtin_servers(context, servers),
        calibration_path=Path(config.tools.calibration_path),
        ceilings_ms={tier: config.tiers.ceiling(tier) for tier in Tier},
        persist=persist,
    )
