"""The MCP server example of docs/tools.md runs as written and gets the tier its metadata asks for.

The example is cut out of the page, started over stdio with the real ``mcp`` SDK and added to
the real tool host, so a change to the SDK's API or to how ``io.glyphoxa/latency`` is read
breaks this test before it misleads a tool author.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from campaigns.basics import Tier
from tools.config import McpConfig, McpServerConfig
from tools.host import ToolHost

from .snippets import ROOT


def _example() -> str:
    page = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    examples = [block for block in blocks if "io.glyphoxa/latency" in block]
    assert len(examples) == 1, "docs/tools.md has one Python server example with latency metadata"
    return examples[0]


async def test_the_example_server_is_a_fast_idempotent_tool(tmp_path: Path) -> None:
    server = tmp_path / "tavern_lore.py"
    server.write_text(_example(), encoding="utf-8")
    config = McpServerConfig(
        name="tavern", transport="stdio", command=[sys.executable, str(server)]
    )
    async with ToolHost(
        McpConfig(servers=[config]), calibration_path=tmp_path / "cal.json"
    ) as host:
        assert await host.wait_for_server("tavern", 30)
        (tool,) = [info for info in host.list_tools() if info.server == "tavern"]
        assert (tool.name, tool.tier, tool.timeout_ms) == ("lookup_rumor", Tier.FAST, 400)
        assert tool.latency.idempotent and tool.latency.read_only
        assert tool.latency.cacheable_seconds == 300
        result = await host.call(
            "lookup_rumor",
            {"topic": "mill"},
            whitelist=["lookup_rumor"],
            tier=Tier.FAST,
            npc="Bartok",
        )
    assert not result.is_error, result.content
    assert "Folk say the mill is haunted." in result.content
