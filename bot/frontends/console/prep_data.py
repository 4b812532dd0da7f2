"""What the preparation pages read: the campaign folder, the memory, the TTS, the tool host.

While a table runs, its own tool host and memory serve (so "what this NPC sees" is what the
table's LLM gets); otherwise the console opens the configured memory itself, read-only in
spirit (it writes only the DM's review decisions), and a tool host that writes nothing, as
``glyphoxa npc show`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.frontends.console.graph import GraphPicture, layout_graph
from bot.frontends.console.views import latency_stats, stage_stats
from campaigns.basics import GlyphoxaError
from campaigns.yamlio import load_model
from npcs.campaign import CampaignScan, scan_campaign
from npcs.schema import NpcDefinition

if TYPE_CHECKING:
    from bot.audio.speech import VoiceRouter
    from bot.frontends.console.hub import ConsoleHub
    from bot.frontends.npc_view import NpcView

__all__ = ["PrepData"]

log = logging.getLogger(__name__)


class PrepData:
    """Lazily opened helpers of the preparation pages (closed with the console)."""

    def __init__(self, hub: ConsoleHub) -> None:
        self.hub = hub
        self._tts: VoiceRouter | None = None
        self._memory: Any = None
        self._memory_identity: tuple[int, int] | None = None
        self._lock = asyncio.Lock()
        self._host: Any = None
        self._host_servers: tuple[str, ...] | None = None
        self._host_stack = contextlib.AsyncExitStack()
        self._world: tuple[tuple[int, int], GraphPicture] | None = None
        self._scan: tuple[tuple[tuple[str, int, int], ...], CampaignScan] | None = None

    def scan(self) -> CampaignScan:
        """The campaign as ``check`` reads it (blocking), read again only when a file of it
        changed."""
        signature = _signature(self.hub.prep.campaign_dir)
        if self._scan is None or self._scan[0] != signature:
            self._scan = (signature, scan_campaign(self.hub.prep.campaign_dir))
        return self._scan[1]

    def world(self) -> GraphPicture:
        """The entity graph, laid out again only when entities.yaml changed (blocking)."""
        path = self.hub.prep.campaign_dir / "entities.yaml"
        try:
            stat = path.stat()
            key: tuple[int, int] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            key = (0, 0)
        if self._world is None or self._world[0] != key:
            entities = self.scan().campaign.entities
            self._world = (key, layout_graph(entities))
        return self._world[1]

    def npc_at(self, path: Path) -> NpcDefinition:
        """The NPC of one file (blocking); its problems as ``check`` words them."""
        loaded = load_model(path, NpcDefinition)
        if loaded.value is None:
            first = loaded.issues[0] if loaded.issues else f"{path}: not found"
            raise GlyphoxaError(str(first))
        return loaded.value

    def tts(self) -> VoiceRouter:
        if self._tts is None:
            from bot.audio.speech import VoiceRouter

            self._tts = VoiceRouter.from_config(self.hub.prep.config.providers.tts)
        return self._tts

    async def memory(self) -> Any:
        """The running table's memory, else the console's own store of ``memory.url``."""
        session = self.hub.session_running()
        if session is not None and session.memory is not None:
            return session.memory
        async with self._lock:
            identity = _file_identity(self.hub.prep.memory_url)
            if self._memory is not None and identity != self._memory_identity:
                # the database file was replaced (a rehearsal starts its own afresh): reopen
                with contextlib.suppress(Exception):
                    await self._memory.close()
                self._memory = None
            if self._memory is None:
                from bot.table.assembly.memory import open_memory

                prep = self.hub.prep
                self._memory = await open_memory(
                    prep.config, url=prep.memory_url, summarize=False, seed=False
                )
                self._memory_identity = _file_identity(prep.memory_url)
        return self._memory

    async def count_review(self) -> int:
        """Facts NPCs proposed that wait for the DM (the navigation's count)."""
        memory = await self.memory()
        return len(await memory.list_facts("pending"))

    async def npc_view(self, path: Path) -> NpcView:
        """What the NPC of ``path`` sees: prompt, tools per tier, notes, memory."""
        from bot.frontends.npc_view import build_npc_view
        from campaigns.basics import Tier

        prep = self.hub.prep
        config = prep.config  # the database named is the one the console reads (a rehearsal's)
        if prep.memory_url != config.memory.url:
            memory_config = config.memory.model_copy(update={"url": prep.memory_url})
            config = config.model_copy(update={"memory": memory_config})
        campaign = (await asyncio.to_thread(self.scan)).campaign  # its valid parts, as cached
        npc = next((n for n, p in campaign.npc_files.items() if p.resolve() == path), None)
        if npc is None:
            raise GlyphoxaError(f"{path.name}: no valid NPC in this file (see the editor)")
        definition = campaign.npcs[npc]
        memory = await self.memory()
        session = self.hub.session_running()
        host = getattr(session, "tools", None) if session is not None else None
        if host is not None:
            return await build_npc_view(
                config, campaign, definition, host, memory, memory_exists=True, tiers=list(Tier)
            )  # fmt: skip
        inspection = await self._inspection_host(campaign)
        return await build_npc_view(
            config, campaign, definition, inspection, memory, memory_exists=True, tiers=list(Tier)
        )  # fmt: skip

    async def _inspection_host(self, campaign: Any) -> Any:
        """A tool host that writes nothing (as ``npc show`` opens it), kept while the NPCs
        need the same built-in servers, so the page opens fast after the first time."""
        from bot.frontends.tool_inspection import cli_tool_host
        from bot.table.assembly.table import builtin_servers_for

        servers = tuple(builtin_servers_for(campaign.npcs.values()))
        async with self._lock:
            if self._host is None or servers != self._host_servers:
                await self._host_stack.aclose()
                self._host_stack = contextlib.AsyncExitStack()
                host = cli_tool_host(self.hub.prep.config, servers=list(servers))
                self._host = await self._host_stack.enter_async_context(host)
                self._host_servers = servers
            return self._host

    def latency_of(self, session_id: str, lines: list[dict[str, Any]]) -> dict[str, Any] | None:
        """A session's latency: from the running table's traces while it runs, else from the
        stages memory kept with its NPC lines (None when it kept none)."""
        for feed in self.hub.tables.values():
            recorder = getattr(feed.session, "recorder", None)
            if recorder is not None and recorder.session_id == session_id:
                return latency_stats(list(feed.finished))
        turns = [(n, line["stages"]) for n, line in enumerate(lines, 1) if line.get("stages")]
        return stage_stats(turns) if turns else None

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._host_stack.aclose()
        self._host = None
        if self._memory is not None:
            with contextlib.suppress(Exception):
                await self._memory.close()
            self._memory = None


def _file_identity(url: str) -> tuple[int, int] | None:
    """Device and inode of a SQLite database file (None for anything else, or no file yet)."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    try:
        stat = Path(url.split(":///", 1)[1].split("?", 1)[0]).stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def _signature(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """Every campaign file's name, modification time and size (a stat each)."""
    found = []
    for path in sorted([*folder.glob("*.y*ml"), *folder.glob("npcs/*"), *folder.glob("tables/*")]):
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(found)
