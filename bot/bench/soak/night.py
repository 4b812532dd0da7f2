"""One soak night as it is played: the script's actions and lines against the running table.

:class:`Night` speaks each line as the player's Discord client would (SPEAKING, Opus packets,
five silence frames), measures when the table first heard the player, and waits for the NPC's
answer to start playing (an addressed line) or for the table to have routed the line (a muted
NPC); table talk and a stale client's lines are checked at the end (:meth:`Night.settle`).
A stall is timed from the player's SPEAKING to the table rejoined and welcomed again; an idle
stretch counts what the bot sent and the CPU the process used while nobody talked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.soak.report import IdleStretch, LineResult, SoakReport
from bot.bench.soak.script import Action, Line
from bot.frontends.discord_bot.runtime import TableRuntime
from bot.table.session.events import NpcSpoke, PlayerSpoke, Routed, SessionEvent
from campaigns.basics import GlyphoxaError, Tier

__all__ = ["ANSWER_TIMEOUT_S", "Night", "play_script", "rss_mb"]

ANSWER_TIMEOUT_S = 25.0
_HEARD_TIMEOUT_S = 8.0
_STALE_WAIT_S = 3.0
_ENDPOINT_S = 3.0
"""A line's speech ends (as the VAD sees it) at most this long after its last packet."""
_KEY_EXPIRY_S = 10.5
"""davey keeps a sender's previous-epoch keys for 10 s: a stale client is heard until then."""
_AFTER_ANSWER_S = 0.3
"""After an answer starts playing, this long before the next line (then it may barge in)."""
STALL_TIMEOUT_S = 60.0
"""A stall not recovered by then fails the night (the goal is 30 s)."""
_STALL_TALK_FRAMES = 50

Progress = Callable[[str], None]


def rss_mb() -> float:
    """This process's resident set size."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


class Night:
    """One soak run: the world, the table, the script, and what was observed."""

    def __init__(self, local: LocalDiscord, runtime: TableRuntime, session: Any) -> None:
        self.local = local
        self.runtime = runtime
        self.session = session
        self.ids = {name: uid for uid, name in local.players.items()}
        self.audio: dict[tuple[str, str], list[bytes]] = {}
        self.muted: set[str] = set()
        self.stale: set[str] = set()
        self.stale_since = 0.0
        """When the last commit a stale client missed happened (wall clock)."""
        self.loss_on = False
        self.results: list[LineResult] = []
        self.outages_s: list[float] = []
        self.spoken: list[NpcSpoke] = []
        self.heard: list[PlayerSpoke] = []
        self.routed: list[Routed] = []
        self.events = asyncio.Event()
        self.used: set[int] = set()
        self.idle_s = 0.0
        """Wall-clock length of an idle stretch."""
        self.idle: list[IdleStretch] = []
        self.stalls_s: list[float] = []
        """Each stall: from the player's SPEAKING to the table rejoined and welcomed."""
        session.listeners.append(self._on_event)

    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, NpcSpoke):
            self.spoken.append(event)
        elif isinstance(event, PlayerSpoke):
            self.heard.append(event)
        elif isinstance(event, Routed):
            self.routed.append(event)
        self.events.set()

    # -- actions -----------------------------------------------------------------------------

    async def act(self, action: Action) -> None:
        local, session = self.local, self.session
        if action.kind in ("join", "leave"):
            change = local.player_joins if action.kind == "join" else local.player_leaves
            await change(self.ids[action.who])
            self.stale_since = time.monotonic()
        elif action.kind == "stale":
            local.voice.mark_stale(self.ids[action.who])
            self.stale.add(action.who)
        elif action.kind == "resync":
            await local.voice.resync(self.ids[action.who])
            self.stale.discard(action.who)
        elif action.kind in ("loss_on", "loss_off"):
            self.loss_on = action.kind == "loss_on"
            local.voice.loss = 0.10 if self.loss_on else 0.0
        elif action.kind == "mute":
            session.controls.mute(action.who)
            self.muted.add(action.who)
        elif action.kind == "unmute":
            session.controls.unmute(action.who)
            self.muted.discard(action.who)
        elif action.kind == "override":
            session.controls.set_tier_override(Tier.DEEP, npc=action.who, duration_s=None)
        elif action.kind == "clear":
            session.controls.set_tier_override(None, npc=action.who, duration_s=None)
        elif action.kind == "move":
            await self._move()
        elif action.kind == "stall":
            await self._stall(self.ids[action.who])
        elif action.kind == "idle":
            await self._idle()
        else:
            raise GlyphoxaError(f"unknown soak action {action.kind!r}")

    async def keys_expired(self) -> None:
        """Only once its old keys expired is a stale client really undecryptable."""
        await asyncio.sleep(max(0.0, self.stale_since + _KEY_EXPIRY_S - time.monotonic()))

    async def _move(self) -> None:
        """A voice server move: a scripted outage, measured until the bot is welcomed again."""
        started = time.monotonic()
        new = await self.local.move_voice_server()
        new.loss = 0.10 if self.loss_on else 0.0
        self.stale.clear()  # every client joins the new server's group fresh
        await asyncio.wait_for(new.bot_welcomed.wait(), timeout=30)
        self.outages_s.append(time.monotonic() - started)

    async def _stall(self, user: int) -> None:
        """The voice server stops relaying to the bot while a player talks: only the stall
        watchdog (SPEAKING, no packets) can notice, and a rejoin is the way back."""
        server, before = self.local.voice, self.runtime.voice
        frames = next(o for (who, _), o in self.audio.items() if self.ids[who] == user)
        server.lose_bot_endpoint()
        started = time.monotonic()
        await server.set_speaking(user, True)
        for frame in frames[:_STALL_TALK_FRAMES]:
            server.send(user, frame)
            await asyncio.sleep(0.02)
        await server.set_speaking(user, False)
        async with asyncio.timeout(STALL_TIMEOUT_S):
            while (  # noqa: ASYNC110 - the table's own watchdog acts; there is no event to wait on
                self.runtime.voice is before
                or not self.local.voice.bot_welcomed.is_set()
                or self.local.voice.bot_forgotten()
            ):
                await asyncio.sleep(0.05)
        self.stalls_s.append(time.monotonic() - started)

    async def _idle(self) -> None:
        """Nobody talks for ``idle_s`` seconds of wall-clock time."""
        await self.session.wait_idle(timeout_s=ANSWER_TIMEOUT_S)
        await asyncio.sleep(1.0)  # the last answer's silence frames
        server = self.local.voice
        keepalives = server.stats.keepalives
        started, cpu = time.monotonic(), time.process_time()
        await asyncio.sleep(self.idle_s)
        ended = time.monotonic()
        self.idle.append(
            IdleStretch(
                seconds=ended - started,
                datagrams=server.bot_datagrams_between(started, ended),
                keepalives=server.stats.keepalives - keepalives,
                cpu_share=(time.process_time() - cpu) / (ended - started),
                forgotten=server.bot_forgotten(),
            )
        )

    # -- lines -------------------------------------------------------------------------------

    async def say(self, line: Line, speed: float) -> LineResult:
        user = self.ids[line.speaker]
        expected = "chatter" if line.npc is None else "addressed"
        if line.npc is not None and line.npc in self.muted:
            expected = "muted"
        if line.speaker in self.stale:
            expected = "stale"
        result = LineResult(line, expected, started=time.monotonic(), lossy=self.loss_on)
        frames = self.audio[(line.speaker, line.text)]
        await self.local.voice.set_speaking(user, True)
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        for frame in [*frames, *[b"\xf8\xff\xfe"] * 5]:
            self.local.voice.send(user, frame)
            if result.heard_after_s is None:
                self._check_heard(result, user)
            next_at += 0.02 / speed
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        result.spoken_s = time.monotonic() - result.started
        result.ended = time.monotonic()
        await self.local.voice.set_speaking(user, False)
        if result.expected in ("addressed", "muted"):
            await self._outcome(result, user)
        heard = [r for r in self.routed if r.speaker == line.speaker and r.at >= result.started]
        if heard:
            result.transcript = heard[0].text
            result.routed_to = heard[0].npcs
        self.results.append(result)
        return result

    def _check_heard(self, result: LineResult, user: int) -> None:
        voice = self.runtime.voice
        at = voice.receiver.heard_at(user) if voice is not None else None
        if at is not None and at >= result.started:
            result.heard_after_s = at - result.started

    async def _outcome(self, result: LineResult, user: int) -> None:
        """Wait for the answer (addressed lines) or the final transcript (the others)."""
        line = result.line
        wait = {"addressed": ANSWER_TIMEOUT_S, "stale": _STALE_WAIT_S}.get(result.expected)
        deadline = time.monotonic() + (wait or _HEARD_TIMEOUT_S)
        while time.monotonic() < deadline:
            if result.heard_after_s is None:
                self._check_heard(result, user)
            turn = self._answer(result)
            if turn is not None:
                result.trace = turn
                if result.answer_at is None:
                    result.answer_at = time.monotonic()
                if time.monotonic() - result.answer_at >= _AFTER_ANSWER_S or not line.npc:
                    return
            elif line.npc is None or result.expected != "addressed":
                if any(h.speaker == line.speaker and h.at >= result.started for h in self.heard):
                    return
            self.events.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.events.wait(), 0.05)

    def settle(self) -> None:
        """End of the night: a line nobody waited for (table talk, a stale client) must not
        have been answered; note what was heard of it."""
        for result in self.results:
            if result.expected in ("chatter", "stale") and result.trace is None:
                result.trace = self._answer(result)
            if result.transcript is None:
                until = result.ended + _ENDPOINT_S + 5
                heard = [r for r in self.routed if r.speaker == result.line.speaker
                         and result.started <= r.at <= until]  # fmt: skip
                if heard:
                    result.transcript, result.routed_to = heard[0].text, heard[0].npcs
            misheard = [npc for npc in result.routed_to if npc != result.line.npc]
            if result.expected == "addressed" and result.trace is None and misheard:
                result.answered_as_heard = self._answer(result, npcs=misheard)

    def _answer(self, result: LineResult, npcs: list[str] | None = None) -> Any:
        """The turn (running or done) an NPC started for this line, once its audio plays: the
        line's own NPC, or (``npcs``) one its words were heard to name."""
        line = result.line
        wanted = npcs if npcs is not None else None if line.npc is None else [line.npc]
        # A running turn's trace gets its playback start when the turn ends; its handle knows
        # as soon as the first frame is played.
        playing = [(t.trace, t.handle.playback_started_at) for t in self.session.turns.running()]
        done = [(event.trace, event.trace.playback_start) for event in self.spoken]
        for trace, played in [*playing, *done]:
            if trace.turn_id in self.used and trace is not result.trace:
                continue
            fits = trace.speaker == line.speaker and (wanted is None or trace.npc in wanted)
            # The turn stems from this line's speech (not the speaker's next line).
            end = trace.speech_end
            fresh = end is not None and result.started <= end <= result.ended + _ENDPOINT_S
            if fits and fresh and played is not None:
                self.used.add(trace.turn_id)
                return trace
        return None


async def play_script(
    table: Night, script: list[Line | Action], report: SoakReport, say: Progress
) -> None:
    overlapping: list[asyncio.Task[Any]] = []
    count = 0
    for event in script:
        if isinstance(event, Action):
            await table.act(event)
            continue
        count += 1
        if event.speaker in table.stale:
            await table.keys_expired()
        task = asyncio.get_running_loop().create_task(
            table.say(event, report.speed), name=f"soak:line:{count}"
        )
        if event.overlap:
            overlapping.append(task)
            continue
        await task
        for other in overlapping:
            await other
        overlapping.clear()
        if report.rss_start_mb is None:  # after the first answered line: models and caches warm
            report.rss_start_mb = rss_mb()
        hour = int(event.at // 3600)
        if hour not in report.rss_by_hour:  # first line of each simulated hour
            report.rss_by_hour[hour] = rss_mb()
        if count % 10 == 0:
            hours = event.at / 3600
            say(f"  simulated {hours:4.2f} h: {count} lines, {report.summary(table.results)}")
