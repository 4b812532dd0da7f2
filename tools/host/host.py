"""``ToolHost``: the one object NPC engines talk to for tools.

It owns the built-in servers, the MCP servers (``tools.host.servers``), the registry,
calibration, metrics and the DM approval gate. ``visible_tools`` is what an NPC's LLM may see
this turn; ``call`` re-checks the very same rule before running anything.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from campaigns.basics import DEFAULT_CEILINGS_MS, GlyphoxaError, Tier
from tools.config import McpConfig, McpServerConfig
from tools.host.approval import ApprovalGate
from tools.host.calibration import Calibration
from tools.host.connections import McpConnection, RestartPolicy, ServerState, describe_error
from tools.host.executor import DEFAULT_MAX_RESULT_CHARS, Executor
from tools.host.known_tools import KnownTools, known_tools_beside
from tools.host.metrics import InvocationCallback, ToolMetrics
from tools.host.registry import NameCollision, Registry, ServerTools, ToolSpecLite
from tools.host.servers import McpServers
from tools.host.types import ToolCall, ToolInfo, ToolResult, TurnToolReport
from tools.spec import BuiltinServer

__all__ = ["ToolHost"]

log = logging.getLogger(__name__)


class ToolHost:
    """Registry, budget enforcer and executor for built-in and MCP tools.

    Use ``async with ToolHost(config.mcp, builtins=...) as host:``. A server that fails to
    connect does not stop the host: its tools stay hidden and it is retried with backoff.
    """

    def __init__(
        self,
        mcp_config: McpConfig | None = None,
        *,
        builtins: Sequence[BuiltinServer] = (),
        calibration_path: Path | None = None,
        ceilings_ms: dict[Tier, int] | None = None,
        on_invocation: InvocationCallback | None = None,
        metrics_registry: CollectorRegistry | None = None,
        restart_policy: RestartPolicy | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        builtin_timeout_s: float = 4.0,
        environment: str | None = None,
        autosave_s: float = 60.0,
        persist: bool = True,
    ) -> None:
        self._builtins = list(builtins)
        self._builtin_timeout_s = builtin_timeout_s
        # persist=False: measurements and listings are read from calibration_path's folder but
        # never written (commands that only look at the tools create no files).
        self.calibration = Calibration(calibration_path, environment, read_only=not persist)
        self.metrics = ToolMetrics(metrics_registry, on_invocation)
        self.registry = Registry(self.calibration, {**DEFAULT_CEILINGS_MS, **(ceilings_ms or {})})
        self.servers = McpServers(
            mcp_config or McpConfig(),
            policy=restart_policy or RestartPolicy(),
            known_tools=KnownTools(
                known_tools_beside(calibration_path) if calibration_path else None,
                read_only=not persist,
            ),
            on_change=self._server_changed,
        )
        self.approvals = ApprovalGate()
        """DM approval policy; the session configures it (``ApprovalGate.configure``)."""
        self._executor = Executor(
            self.registry,
            self.metrics,
            on_retier=self._retiered,
            approvals=self.approvals,
            unknown_hint=self.servers.unknown_hint,
            max_result_chars=max_result_chars,
        )
        self._started_builtins: list[BuiltinServer] = []
        self._builtin_errors: dict[str, str] = {}
        self._probes: set[asyncio.Task[Any]] = set()
        self._last_state: dict[str, ServerState] = {}
        self._autosave_s = autosave_s
        self._autosave: asyncio.Task[None] | None = None
        self._started = False
        self._starting = False
        self._named = asyncio.Event()
        self._change = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> ToolHost:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start built-ins, connect every enabled MCP server (in parallel, each bounded by its
        ``connect_timeout_s``) and build the registry."""
        if self._started:
            return
        self._started = True
        names = [b.name for b in self._builtins]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise GlyphoxaError(f"built-in server names must be unique: {sorted(duplicates)}")
        for builtin in self._builtins:
            if builtin.startup is not None:
                try:
                    await builtin.startup()
                except Exception as error:  # one broken built-in must not take the others down
                    log.error("built-in server %s failed to start: %s", builtin.name, error)
                    self._builtin_errors[builtin.name] = describe_error(error)
                    continue
            self._started_builtins.append(builtin)
        self._rebuild()
        # Names are handed out once every server had its first chance to come up, so the one
        # that answers first does not take a shared name from one listed before it.
        self._starting = True
        try:
            await self.servers.start()
        finally:
            self._starting = False
        self._rebuild()
        self._named.set()
        writable = self.calibration.path is not None and not self.calibration.read_only
        if writable and self._autosave_s > 0:
            baseline = self._executor.recorded
            loop = self._autosave_loop(baseline)
            self._autosave = asyncio.create_task(loop, name="tool-calibration")

    async def close(self) -> None:
        """Stop every connection, shut built-ins down, save calibration."""
        if self._autosave is not None:
            self._autosave.cancel()
            await asyncio.gather(self._autosave, return_exceptions=True)
            self._autosave = None
        for probe in list(self._probes):
            probe.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        await self._executor.drain()
        await self.servers.stop()
        for builtin in reversed(self._started_builtins):
            if builtin.shutdown is not None:
                try:
                    await builtin.shutdown()
                except Exception:
                    log.exception("built-in server %s failed to shut down", builtin.name)
        self._started_builtins.clear()
        self._builtin_errors.clear()
        await self.metrics.drain()
        self.save_calibration()
        self._started = False
        self._named.clear()

    def save_calibration(self) -> None:
        self.calibration.save()

    async def _autosave_loop(self, saved: int) -> None:
        """Save measurements now and then, so a crash of the bot loses little."""
        while True:
            await asyncio.sleep(self._autosave_s)
            if self._executor.recorded == saved:
                continue
            saved = self._executor.recorded
            snapshot = self.calibration.snapshot()  # on the loop: the windows live here
            try:
                await asyncio.to_thread(self.calibration.write, snapshot)
            except GlyphoxaError as error:
                log.warning("%s", error)

    def restore_calibration(self, data: dict[str, list[tuple[float, bool]]]) -> None:
        """Adopt measured windows (``server/tool`` keys), e.g. from the campaign store."""
        self.calibration.restore(data)
        self._rebuild()

    async def add_server(self, config: McpServerConfig, *, wait: bool = True) -> list[ToolInfo]:
        """Connect a new MCP server at runtime; its tools join the registry when it is up.

        Raises GlyphoxaError if ``wait`` and its first connect attempt fails (the connection
        keeps retrying in the background).
        """
        connection = await self.servers.add(config, {b.name for b in self._builtins})
        if not wait:
            return []
        await connection.wait_attempted(config.connect_timeout_s)
        if connection.state is not ServerState.UP:
            raise GlyphoxaError(
                f"MCP server {config.name!r} did not come up: "
                f"{connection.last_error or 'no answer'} (retrying in the background)"
            )
        return [t for t in self.list_tools() if t.server == config.name]

    async def remove_server(self, name: str) -> None:
        await self.servers.remove(name)
        self._rebuild()

    async def restart_server(self, name: str) -> None:
        """Reconnect an MCP server now, e.g. one that gave up after its restart limit."""
        await self.servers.restart(name)
        self._rebuild()

    async def wait_for_server(self, name: str, timeout_s: float = 10.0) -> bool:
        """True once the MCP server ``name`` is up (e.g. after a restart)."""
        return await self.servers.get(name).wait_up(timeout_s)

    async def wait_for(
        self, predicate: Callable[[ToolHost], bool], timeout_s: float = 10.0
    ) -> bool:
        """Wait until ``predicate(host)`` holds, re-checking on every registry change."""
        try:
            async with asyncio.timeout(timeout_s):
                while not predicate(self):
                    await self._change.wait()
            return True
        except TimeoutError:
            return False

    def server_states(self) -> dict[str, dict[str, Any]]:
        """State, restarts and last error of every MCP server (for status displays)."""
        states = {
            b.name: {"state": "failed", "restarts": 0, "last_error": self._builtin_errors[b.name]}
            if b.name in self._builtin_errors
            else {"state": "up", "restarts": 0, "last_error": None}
            for b in self._builtins
        }
        states.update(self.servers.states())
        return states

    def _server_changed(self, connection: McpConnection) -> None:
        if not self._starting:  # start() names everything once the first attempts are done
            self._rebuild()
        came_up = connection.state is ServerState.UP and self._last_state.get(connection.name) != (
            ServerState.UP
        )
        self._last_state[connection.name] = connection.state
        if connection.config.probe and came_up:
            task = asyncio.create_task(
                self._probe_server(connection.name), name=f"probe:{connection.name}"
            )
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)

    async def _probe_server(self, name: str) -> None:
        await self._named.wait()
        await self.calibrate(servers=[name])

    async def calibrate(
        self, *, rounds: int = 5, servers: Collection[str] | None = None
    ) -> list[ToolInfo]:
        """Synthetic probes: call every safe tool ``rounds`` times to measure its latency.

        Only tools declared idempotent or read-only are probed (never one with side effects),
        and only those callable without arguments. Returns the probed tools, freshly measured.
        """
        probed: list[ToolInfo] = []
        for entry in list(self.registry.ordered):
            if servers is not None and entry.server not in servers:
                continue
            if not entry.healthy or not (entry.latency.idempotent or entry.latency.read_only):
                continue
            if not self._executor.accepts_no_arguments(entry):
                continue
            for _ in range(rounds):
                await self._executor.probe(entry)
            if entry.info is not None:
                probed.append(entry.info)
        self.save_calibration()
        self._notify_change()
        return probed

    # -- registry views --------------------------------------------------------------------

    @property
    def collisions(self) -> list[NameCollision]:
        return list(self.registry.collisions)

    def list_tools(self) -> list[ToolInfo]:
        """Every known tool, healthy or not, fastest first."""
        return [entry.info for entry in self.registry.ordered if entry.info is not None]

    def get_tool(self, name: str) -> ToolInfo | None:
        entry = self.registry.entries.get(name)
        return entry.info if entry is not None else None

    def visible_tools(self, whitelist: Iterable[str], tier: Tier) -> list[ToolInfo]:
        """The NPC's whitelist intersected with healthy tools at or below ``tier``, fastest
        first. ``"*"`` in the whitelist means every tool."""
        return list(self.registry.view(whitelist, tier, openai=False))

    def openai_tools(self, whitelist: Iterable[str], tier: Tier) -> list[dict[str, Any]]:
        """``visible_tools`` in the Chat Completions ``tools=`` format."""
        return list(self.registry.view(whitelist, tier, openai=True))

    def needs_approval(self, npc: str, names: Iterable[str]) -> bool:
        """Whether any of these calls by ``npc`` will wait for the DM (an engine then says a
        filler line first)."""
        for name in names:
            entry = self.registry.entries.get(name)
            if entry is not None and self.approvals.needed(npc, name, entry.latency.read_only):
                return True
        return False

    # -- execution -------------------------------------------------------------------------

    def follow_session(self, session_id: Callable[[], str | None]) -> None:
        """Tell every call which campaign-memory session it is made in (``tools.caller``):
        tools that record something, like ``propose_memory``, file it under that session."""
        self._executor.session_of = session_id

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        whitelist: Iterable[str],
        tier: Tier,
        npc: str,
        call_id: str = "",
    ) -> ToolResult:
        """Run one tool call; every failure comes back as an ``is_error`` result."""
        allowed: Collection[str] = (
            whitelist if isinstance(whitelist, frozenset | set | tuple | list) else tuple(whitelist)
        )
        return await self._executor.call(
            name, arguments, whitelist=allowed, tier=tier, npc=npc, call_id=call_id
        )

    async def call_many(
        self, calls: Sequence[ToolCall], *, whitelist: Iterable[str], tier: Tier, npc: str
    ) -> TurnToolReport:
        """Run the calls of one LLM response in parallel; the turn pays the slowest."""
        allowed = frozenset(whitelist)
        results = await asyncio.gather(
            *(
                self.call(c.name, c.arguments, whitelist=allowed, tier=tier, npc=npc, call_id=c.id)
                for c in calls
            )
        )
        cost = max((r.duration_ms for r in results), default=0.0)
        shown = [
            dataclasses.replace(result, arguments=call.arguments)
            for result, call in zip(results, calls, strict=True)
        ]
        return TurnToolReport(results=shown, cost_ms=cost)

    # -- internals -------------------------------------------------------------------------

    def _retiered(self) -> None:
        self.registry.reorder()
        self._notify_change()

    def _rebuild(self) -> None:
        servers: list[ServerTools] = []
        for builtin in self._builtins:
            if builtin.name in self._builtin_errors:
                continue
            specs = [ToolSpecLite.from_builtin(tool) for tool in builtin.tools]
            timeout_s = self._builtin_timeout_s
            servers.append(ServerTools(builtin.name, "builtin", specs, default_timeout_s=timeout_s))
        servers.extend(self.servers.offers())
        self.registry.rebuild(servers)
        self._notify_change()

    def _notify_change(self) -> None:
        """Wake ``wait_for`` callers: the registry, a tier or the measurements changed."""
        self._change.set()
        self._change = asyncio.Event()
