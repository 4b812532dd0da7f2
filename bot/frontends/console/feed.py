"""One table as the console sees it: the session's events in, rendered page updates out.

The session calls :meth:`TableFeed.see` for every event (a watcher, ``TableSession.watchers``);
that call only appends to a bounded inbox and wakes the feed's task, so the table never waits
for the console, and a console that fails or falls behind drops events instead of holding the
table. The task renders each change once (server-side, autoescaped HTML) and hands it to every
open page through a bounded queue per page; a page that cannot keep up is dropped and told
how many updates it missed, and reloads. A short ring of recent updates lets a page that just
loaded (or reconnected) catch up on what happened since it was rendered.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.frontends.console.approvals import ConsoleApprover, FirstAnswer
from bot.frontends.console.render import Renderer
from bot.frontends.console.views import latency_stats, turn_state, turn_view
from bot.table.session.events import (
    BargedIn,
    DmAction,
    LiveEvent,
    NpcReloaded,
    NpcSpoke,
    PlayerPartial,
    PlayerSpoke,
    Routed,
    SessionEvent,
    SpeakingChanged,
    TableAlert,
    TurnQueued,
)
from bot.table.session.seats import NpcStatus
from bot.table.session.trace import TurnTrace

__all__ = ["Message", "Subscriber", "TableFeed"]

log = logging.getLogger(__name__)

_INBOX = 4096
_RING = 600
_QUEUE = 400
"""Updates a page may fall behind by before it is dropped (and reloads)."""
_LINES = 200
_CARDS = 30
_STATS_TURNS = 300
_TICK_S = 0.1
"""How often a watched table is looked at for changes no event announces (a turn starting
to speak, an NPC thinking)."""
_OFFSET = time.time() - time.monotonic()
_REPLACED = frozenset({"partials", "presence", "npcs", "running", "stats", "night"})
"""Updates that replace a whole block: of several in one pass, only the last is sent (timed
from the first event that asked for it)."""


@dataclass(frozen=True, slots=True)
class Message:
    """One page update: an SSE event ``name`` carrying ``html``; ``private`` ones reach the DM
    only, never a read-only viewer."""

    seq: int
    name: str
    html: str
    emitted_ms: int
    private: bool


@dataclass(slots=True, eq=False)
class Subscriber:
    """One open page."""

    dm: bool
    queue: asyncio.Queue[Message | None] = field(default_factory=lambda: asyncio.Queue(_QUEUE))
    missed: int = 0
    owner: Any = None
    """The console session of the browser (its page closes when the session ends)."""

    def close(self) -> None:
        """End the page's stream (it learns nothing more)."""
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)

    def offer(self, message: Message) -> None:
        if self.missed:
            self.missed += 1
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.missed = 1  # the page reloads; everything until then is lost to it
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.queue.put_nowait(None)


class TableFeed:
    """The console's view of one running table (module docstring)."""

    def __init__(
        self,
        table_id: str,
        label: str,
        session: Any,
        renderer: Renderer,
        *,
        members: Callable[[], list[str]] | None = None,
        on_end: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.id = table_id
        self.label = label
        self.session = session
        self.on_end = on_end
        self.started_at = time.time()
        self.ended = False
        self._render = renderer
        self._members = members
        self._inbox: deque[tuple[float, SessionEvent | LiveEvent]] = deque(maxlen=_INBOX)
        self._wake = asyncio.Event()
        self._seq = itertools.count(1)
        self.last_seq = 0
        self._ring: deque[Message] = deque(maxlen=_RING)
        self.lines: deque[Message] = deque(maxlen=_LINES)
        self.cards: deque[Message] = deque(maxlen=_CARDS)
        self.partials: dict[str, str] = {}
        self.speaking: set[str] = set()
        self.running: dict[int, TurnTrace] = {}
        self.finished: deque[TurnTrace] = deque(maxlen=_STATS_TURNS)
        self.subscribers: set[Subscriber] = set()
        self.approver = ConsoleApprover(on_change=self._approvals_changed)
        self._previous_approver: Any = None
        self._task: asyncio.Task[None] | None = None
        self._signature: tuple[Any, ...] = ()
        self._pending: dict[str, tuple[str, int, bool]] = {}
        self._batching = False
        self.pulse: Any = None
        """The console's pulse (``bot.frontends.console.pulse``): approvals and notices for every
        page."""
        self.record_id: str | None = None
        """The campaign-memory session of the table, once it ended."""
        self.dropped = 0
        self.cpu_s = 0.0
        """CPU time the feed's task spent rendering and handing out updates (for the bench)."""

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Watch the session and answer its tool approvals beside its own approver."""
        self.session.watchers.append(self.see)
        tools = getattr(self.session, "tools", None)
        if tools is not None:
            self._previous_approver = tools.approvals.approver
            approvers = [a for a in (self._previous_approver, self.approver) if a is not None]
            tools.approvals.configure(approver=FirstAnswer(approvers))
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"console:{self.id}")

    async def stop(self) -> None:
        """Stop watching; open pages are told the table ended."""
        self.ended = True
        with contextlib.suppress(ValueError):
            self.session.watchers.remove(self.see)
        tools = getattr(self.session, "tools", None)
        if tools is not None and isinstance(tools.approvals.approver, FirstAnswer):
            tools.approvals.approver = self._previous_approver
        for item in list(self.approver.pending.values()):
            if not item.decided.done():
                item.decided.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._publish("ended", self._render.fragment("ended_notice", feed=self), private=False)
        for subscriber in list(self.subscribers):
            subscriber.close()  # the stream ends (``missed`` is 0)

    # -- the session's side: O(1), never raises -------------------------------------------------
    def see(self, event: SessionEvent | LiveEvent) -> None:
        """A watcher of the session: queue the event, wake the feed."""
        if len(self._inbox) == _INBOX:
            self.dropped += 1
        self._inbox.append((time.time(), event))
        self._wake.set()

    # -- pages ----------------------------------------------------------------------------------
    def subscribe(
        self, *, dm: bool, after: int | None, owner: Any = None
    ) -> tuple[Subscriber, list[Message]]:
        """A page joins; returns its queue and the updates since ``after`` it has not seen
        (None: the page is fresh and needs none). A gap larger than the ring makes it reload."""
        subscriber = Subscriber(dm=dm, owner=owner)
        backlog: list[Message] = []
        if after is not None and after > self.last_seq:  # a page of an earlier run: reload
            subscriber.missed = 1
        elif after is not None and after < self.last_seq:
            oldest = self._ring[0].seq if self._ring else self.last_seq + 1
            if after + 1 < oldest:
                subscriber.missed = self.last_seq - after
            else:
                backlog = [m for m in self._ring if m.seq > after and (dm or not m.private)]
        self.subscribers.add(subscriber)
        self._wake.set()  # the ticker starts looking now that someone watches
        return subscriber, backlog

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    def page(self, *, dm: bool) -> dict[str, Any]:
        """Everything a freshly loaded live page shows, rendered, and the last update's number."""
        return {
            "seq": self.last_seq,
            "lines": [m.html for m in self.lines if dm or not m.private],
            "cards": [m.html for m in reversed(self.cards)] if dm else [],
            "partials": self._partials_html(),
            "presence": self._presence_html(),
            "running": self._render.fragment("running", turns=self._running_views()) if dm else "",
            "stats": self._stats_html(),
            "npcs": self.npc_rows() if dm else [],
            "night": self._night_html() if dm else "",
            "moods": self.moods() if dm else [],
            "ambience": self.ambience() if dm else {},
        }

    def elapsed_text(self) -> str:
        """How long the table has run: ``1 h 05 min`` (the page keeps it ticking)."""
        minutes = int((time.time() - self.started_at) // 60)
        return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"

    def moods(self) -> list[str]:
        """The ambience moods the campaign has music for."""
        from tools.builtin.ambience import find_moods

        campaign = getattr(self.session, "campaign", None)
        return sorted(find_moods(getattr(campaign, "path", None)))

    def ambience(self) -> dict[str, Any]:
        """What the ambience plays and how loud (0-100)."""
        player = self.session.mixer.ambience
        playing = player.now_playing
        return {"mood": playing[1] if playing else None, "volume": round(player.volume * 100)}

    def npc_rows(self) -> list[NpcStatus]:
        """Each NPC's live status, as the cards show it."""
        return list(self.session.status().npcs.values())

    # -- the feed's task ------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            if self.subscribers:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), _TICK_S)
            else:
                await self._wake.wait()
            self._wake.clear()
            started = time.thread_time()
            self._batching = True
            try:
                while self._inbox:
                    wall, event = self._inbox.popleft()
                    try:
                        self._handle(event, int(wall * 1000))
                    except Exception:  # one bad event must not end the console's view
                        log.exception("console: could not show %s", type(event).__name__)
                if self.subscribers:
                    self._tick()
            finally:
                self._batching = False
                self._flush()
                self.cpu_s += time.thread_time() - started

    def _handle(self, event: SessionEvent | LiveEvent, wall_ms: int) -> None:
        at = getattr(event, "at", None)
        emitted = int((at + _OFFSET) * 1000) if isinstance(at, float) else wall_ms
        render = self._render.fragment
        if isinstance(event, PlayerPartial):
            if event.text:
                self.partials[event.speaker] = event.text
            else:  # words that were not for display (the DM's private direction)
                self.partials.pop(event.speaker, None)
            self._publish("partials", self._partials_html(), emitted=emitted)
        elif isinstance(event, SpeakingChanged):
            (self.speaking.add if event.speaking else self.speaking.discard)(event.speaker)
            self._publish("presence", self._presence_html(), emitted=emitted)
        elif isinstance(event, PlayerSpoke):
            self.partials.pop(event.speaker, None)
            line = render("line", kind="player", who=event.speaker, text=event.text, at=emitted)
            self._line(line, emitted, private=False)
            self._publish("partials", self._partials_html(), emitted=emitted)
        elif isinstance(event, Routed):
            line = render("routed", event=event, at=emitted)
            self._line(line, emitted, private=True)
        elif isinstance(event, TurnQueued):
            self.running[event.trace.turn_id] = event.trace
            self._turns_changed(emitted)
        elif isinstance(event, NpcSpoke):
            self._turn_done(event.trace, emitted)
        elif isinstance(event, BargedIn):
            text = f"{event.speaker} cut {event.npc} off"
            self._line(render("line", kind="barge", who="", text=text, at=emitted), emitted, False)
        elif isinstance(event, DmAction):
            line = render("dm_line", event=event, at=emitted)
            self._line(line, emitted, private=True)
            self._publish("npcs", self._npcs_html(), emitted=emitted, private=True)
        elif isinstance(event, TableAlert):
            line = render("line", kind="alert", who="", text=event.message, at=emitted)
            self._line(line, emitted, private=True)
        elif isinstance(event, NpcReloaded):
            if self.pulse is not None:  # every DM page shows it (the editor's too)
                self.pulse.notice(render("reload_notice", event=event, at=emitted))
            self._publish("npcs", self._npcs_html(), emitted=emitted, private=True)

    def _turn_done(self, trace: TurnTrace, emitted: int) -> None:
        self.running.pop(trace.turn_id, None)
        self.finished.append(trace)
        said = trace.spoken or ""
        if said:
            line = self._render.fragment(
                "line", kind="npc", who=trace.npc, text=said, at=emitted, tier=trace.tier,
                interrupted=trace.interrupted,
            )  # fmt: skip
            self._line(line, emitted, private=False)
        card = self._render.fragment("turn_card", turn=turn_view(trace), at=emitted)
        self.cards.append(self._publish("turn", card, emitted=emitted, private=True))
        self._publish("stats", self._stats_html(), emitted=emitted)
        self._publish("night", self._night_html(), emitted=emitted, private=True)
        self._turns_changed(emitted)

    def _turns_changed(self, emitted: int) -> None:
        running = self._render.fragment("running", turns=self._running_views())
        self._publish("running", running, emitted=emitted, private=True)
        self._publish("npcs", self._npcs_html(), emitted=emitted, private=True)

    def _tick(self) -> None:
        """Changes no event announces: a turn starts speaking, an NPC takes the floor."""
        mixer = self.session.mixer
        holder = mixer.current
        speaking_npc = holder.npc if holder is not None and mixer.npc_speaking else None
        signature = (
            tuple((i, turn_state(t)) for i, t in self.running.items()),
            speaking_npc,
            tuple(sorted(self._member_names())),
        )
        if signature == self._signature:
            return
        turns_moved = signature[:2] != self._signature[:2]
        self._signature = signature
        now = int(time.time() * 1000)
        if turns_moved:
            self._turns_changed(now)
        self._publish("presence", self._presence_html(), emitted=now)

    def _approvals_changed(self) -> None:
        if self.pulse is not None:  # the dock of every DM page, with the nav's count
            self.pulse.changed()

    # -- rendering helpers ------------------------------------------------------------------------
    def _line(self, html: str, emitted: int, private: bool) -> None:
        self.lines.append(self._publish("line", html, emitted=emitted, private=private))

    def _member_names(self) -> list[str]:
        if self._members is not None:
            try:
                return list(self._members())
            except Exception:  # a display detail: the voice channel may be gone
                return []
        return [speaker.name for speaker in self.session.lanes]

    def _presence_html(self) -> str:
        mixer = self.session.mixer
        holder = mixer.current
        npc = holder.npc if holder is not None and mixer.npc_speaking else None
        members = sorted(set(self._member_names()) | self.speaking)
        return self._render.fragment(
            "presence", members=members, speaking=self.speaking, npc=npc
        )  # fmt: skip

    def _partials_html(self) -> str:
        return self._render.fragment("partials", partials=dict(self.partials))

    def _running_views(self) -> list[Any]:
        return [turn_view(trace) for trace in self.running.values()]

    def _npcs_html(self) -> str:
        return self._render.fragment("npc_statuses", npcs=self.npc_rows(), table=self.id)

    def _night_html(self) -> str:
        spend = getattr(self.session, "spend", None)
        summary = spend.summary() if spend is not None else None
        return self._render.fragment("night", feed=self, summary=summary)

    def _stats_html(self) -> str:
        return self._render.fragment("stats", stats=latency_stats(list(self.finished)))

    def _publish(
        self, name: str, html: str, *, emitted: int | None = None, private: bool = False
    ) -> Message:
        stamp = emitted if emitted is not None else int(time.time() * 1000)
        if self._batching and name in _REPLACED:
            earlier = self._pending.pop(name, None)  # re-inserted last: blocks keep their order
            first = min(stamp, earlier[1]) if earlier is not None else stamp
            self._pending[name] = (str(html), first, private)
            return Message(0, name, str(html), first, private)
        return self._send(name, str(html), stamp, private)

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        for name, (html, stamp, private) in pending.items():
            self._send(name, html, stamp, private)

    def _send(self, name: str, html: str, stamp: int, private: bool) -> Message:
        seq = next(self._seq)
        self.last_seq = seq
        message = Message(seq, name, html, stamp, private)
        self._ring.append(message)
        for subscriber in list(self.subscribers):
            if subscriber.dm or not private:
                subscriber.offer(message)
        return message
