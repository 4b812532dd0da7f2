"""What a soak night observed, and the figures ``glyphoxa bench soak`` reports against its goals.

Goals: every addressed turn answered; no deaf period over 2 s outside the scripted
outages (a voice server move, a stall; a client left on a stale epoch is not ours to hear);
memory growth under 20 MB per simulated hour; no task left running after the table stopped; a
stall recovered within 30 s; an idle stretch costs at most one datagram a second and 1 % of a
core, and the relay that forgets silent endpoints still relays to the bot at its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.bench.result import BenchResult
from bot.bench.soak.script import Line
from campaigns.basics import percentile

__all__ = ["LineResult", "SoakReport"]

DEAF_GOAL_S = 2.0
MEMORY_GOAL_MB_PER_H = 20.0
STALL_GOAL_S = 30.0
IDLE_DATAGRAMS_GOAL = 1.0
"""Per second, while nobody talks."""
IDLE_CPU_GOAL = 0.01
"""Share of one core, while nobody talks."""


@dataclass(frozen=True, slots=True)
class IdleStretch:
    """What the bot did while nobody talked."""

    seconds: float
    datagrams: int
    """UDP datagrams the bot sent (the voice server counted them)."""
    keepalives: int
    cpu_share: float
    """This process's CPU time / wall time: the bot and the local Discord beside it."""
    forgotten: bool
    """At its end the relay had forgotten the bot's endpoint (the bot would be deaf)."""

    @property
    def datagrams_per_s(self) -> float:
        return self.datagrams / self.seconds if self.seconds else float("nan")


@dataclass(slots=True)
class LineResult:
    """One scripted line and what the table made of it."""

    line: Line
    expected: str
    """``addressed`` (must be answered), ``chatter`` or ``muted`` (must not be), ``stale``
    (the sender's client is on an old epoch: not ours to hear)."""
    started: float
    lossy: bool = False
    """Spoken during a burst of 10 % packet loss."""
    heard_after_s: float | None = None
    """From the first packet sent to the first frame of this player decoded."""
    spoken_s: float = 0.0
    ended: float = float("inf")
    """When its last packet was sent (``time.monotonic()``)."""
    answer_at: float | None = None
    trace: Any = None
    """The NPC turn that answered it (``TurnTrace``)."""
    transcript: str | None = None
    """What the table heard (the first final transcript of this speaker after the line began)."""
    routed_to: tuple[str, ...] = ()
    answered_as_heard: Any = None
    """The turn another NPC gave an addressed line whose words, as the recognizer heard them,
    named that NPC ("Bartok, what's on tap" heard as "Boredok, Whisper Tap"): the table heard
    and answered it, the recognizer misheard it. Counted apart from ``answered``."""

    @property
    def answered(self) -> bool:
        return self.trace is not None

    @property
    def deaf_s(self) -> float:
        """How long the table did not hear this line's speaker (all of it, if never)."""
        return self.spoken_s if self.heard_after_s is None else self.heard_after_s

    @property
    def v2v_ms(self) -> float | None:
        """End of the player's speech to the NPC's first audio (once the turn is over)."""
        return self.trace.stages_ms()["voice_to_voice"] if self.trace is not None else None


@dataclass(slots=True)
class SoakReport:
    hours: float
    """Simulated hours."""
    quick: bool
    speed: float
    results: list[LineResult] = field(default_factory=list)
    outages_s: list[float] = field(default_factory=list)
    """Voice server moves: from the move until the bot was welcomed on the new server."""
    stalls_s: list[float] = field(default_factory=list)
    """Stalls: from the player's SPEAKING until the bot rejoined and was welcomed."""
    idle: list[IdleStretch] = field(default_factory=list)
    forget_after_s: float | None = None
    """The voice server forgot a bot endpoint silent this long."""
    idle_at: float | None = None
    """When the idle stretch began, in the script's simulated seconds."""
    rejoins: int = 0
    dm_notices: list[str] = field(default_factory=list)
    rss_start_mb: float | None = None
    """RSS after the first line (models and caches warm)."""
    rss_end_mb: float | None = None
    rss_by_hour: dict[int, float] = field(default_factory=dict)
    """RSS at the first line of each simulated hour."""
    wall_s: float = 0.0
    setup_s: float = 0.0
    """Synthesizing the players' lines, loading models, connecting (before the first line)."""
    night_started: float = 0.0
    fds_leaked: int = 0
    tasks_left: list[str] = field(default_factory=list)
    tasks_before: int = 0
    metrics: Any = None
    receive: dict[str, Any] = field(default_factory=dict)
    """The last voice connection's receive counters."""
    overflow: int = 0
    clean_hearing: dict[tuple[str, str], str] = field(default_factory=dict)
    """What the recognizer makes of a missed line's own audio, never sent (speaker, text):
    the same mishearing from clean audio is the model's, not the connection's."""
    """Frames dropped because a speaker's queue to the session was full (a slow consumer)."""

    def of(self, expected: str) -> list[LineResult]:
        return [r for r in self.results if r.expected == expected]

    def summary(self, results: list[LineResult] | None = None) -> str:
        results = self.results if results is None else results
        addressed = [r for r in results if r.expected == "addressed"]
        answered = sum(r.answered for r in addressed)
        return f"{answered}/{len(addressed)} addressed turns answered"

    def unexpected_answers(self) -> list[LineResult]:
        return [r for r in self.results if r.expected in ("chatter", "muted") and r.answered]

    def longest_deaf(self) -> LineResult | None:
        """Lines of healthy senders only: a stale client is not ours to hear."""
        healthy = [r for r in self.results if r.expected != "stale"]
        return max(healthy, key=lambda r: r.deaf_s, default=None)

    def growth_mb_per_h(self) -> tuple[float, float, float] | None:
        """(growth per simulated hour, from MB, over hours). From the start of the second hour
        when there is one: the first hour makes every lane, voice and cache for the first time
        (warm-up, not a leak); a night shorter than two hours can only measure from its first
        line and is too short to judge."""
        if self.rss_end_mb is None:
            return None
        if 1 in self.rss_by_hour and self.hours > 1.5:
            start, span = self.rss_by_hour[1], self.hours - 1
        elif self.rss_start_mb is not None and self.hours > 0:
            start, span = self.rss_start_mb, self.hours
        else:
            return None
        return (self.rss_end_mb - start) / span, start, span

    def p50_v2v(self, hour: int) -> tuple[float | None, int]:
        """voice-to-voice p50 (ms) of answered turns in simulated hour ``hour`` (-1: last)."""
        last = int(max((r.line.at for r in self.results), default=0) // 3600)
        wanted = last if hour < 0 else hour
        samples = [
            r.v2v_ms
            for r in self.results
            if r.v2v_ms is not None and int(r.line.at // 3600) == wanted
        ]
        return (percentile(samples, 50) if samples else None), len(samples)

    def event(self, event: str) -> float:
        """``glyphoxa_voice_events_total`` summed over causes."""
        if self.metrics is None:
            return 0.0
        total = 0.0
        for family in self.metrics.registry.collect():
            if family.name == "glyphoxa_voice_events":
                total += sum(
                    s.value
                    for s in family.samples
                    if s.name.endswith("_total") and s.labels.get("event") == event
                )
        return total

    def _clean(self, speaker: str, text: str) -> str:
        heard = self.clean_hearing.get((speaker, text))
        return "" if heard is None else f" (its audio heard straight, never sent: {heard!r})"

    def bench_results(self) -> list[BenchResult]:
        mode = "--quick (20 simulated min)" if self.quick else f"{self.hours:g} simulated h"
        method = (
            f"soak {mode}: 5 players through the local Discord (discord.py voice, real DAVE "
            f"group, Opus, VAD, Whisper tiny.en, instant LLM, Piper), speech at {self.speed:g}x, "
            f"silence between lines skipped; {self.wall_s:.0f} s wall "
            f"({self.setup_s:.0f} s of it setup)"
        )
        addressed = self.of("addressed")
        answered = sum(r.answered for r in addressed)
        unexpected = self.unexpected_answers()
        missed = [f"{r.line.at:.0f}s {r.line.speaker}: {r.line.text!r} heard as "
                  f"{r.transcript!r} -> {', '.join(r.routed_to) or 'nobody'}"
                  + self._clean(r.line.speaker, r.line.text)
                  + (f"; {r.answered_as_heard.npc} answered it as heard"
                     if r.answered_as_heard is not None else "")
                  for r in addressed if not r.answered]  # fmt: skip
        out = [
            BenchResult(
                "addressed turns answered",
                100.0 * answered / len(addressed) if addressed else float("nan"),
                "%",
                method,
                "100 %, nothing else answered",
                bool(addressed) and answered == len(addressed) and not unexpected,
                {"answered": answered, "addressed": len(addressed), "missed": missed,
                 "answered_though_muted_or_chatter": [
                     f"{r.line.at:.0f}s {r.line.speaker} ({r.expected}): {r.line.text!r} -> "
                     f"{r.trace.npc}: {r.trace.spoken!r}" for r in unexpected],
                 "lossy_lines": sum(r.lossy for r in addressed)},
            )
        ]  # fmt: skip
        deaf = self.longest_deaf()
        if deaf is not None:
            out.append(
                BenchResult(
                    "longest deaf period (outside scripted outages)",
                    deaf.deaf_s,
                    "s",
                    method + "; first packet sent -> first frame of that player decoded",
                    f"<= {DEAF_GOAL_S:g} s",
                    deaf.deaf_s <= DEAF_GOAL_S,
                    {
                        "line": f"{deaf.line.at:.0f}s {deaf.line.speaker}: {deaf.line.text}",
                        "never_heard": deaf.heard_after_s is None,
                    },
                )
            )
        growth = self.growth_mb_per_h()
        if growth is not None:
            per_h, start, span = growth
            judged = span >= 1.0
            out.append(
                BenchResult(
                    "memory growth per simulated hour",
                    per_h,
                    "MB/h",
                    method + f"; RSS {start:.0f} MB -> {self.rss_end_mb:.0f} MB over the last "
                    f"{span:.2g} simulated h" + ("" if judged else " (too short to judge)"),
                    f"< {MEMORY_GOAL_MB_PER_H:g} MB/h" if judged else None,
                    per_h < MEMORY_GOAL_MB_PER_H if judged else None,
                    {
                        "rss_first_line_mb": self.rss_start_mb,
                        "rss_end_mb": self.rss_end_mb,
                        "rss_by_hour_mb": {h: round(v) for h, v in self.rss_by_hour.items()},
                    },
                )
            )
        out.append(
            BenchResult(
                "tasks left after the table stopped",
                float(len(self.tasks_left)),
                "tasks",
                method + f"; asyncio tasks besides the bench's own ({self.tasks_before} before)",
                "0",
                not self.tasks_left,
                {"names": self.tasks_left},
            )
        )
        out.append(
            BenchResult(
                "file descriptors left after the table stopped",
                float(self.fds_leaked),
                "fds",
                method + "; /proc/self/fd after teardown minus before setup",
                "<= 0",
                self.fds_leaked <= 0,
            )
        )
        for label, hour in (("first", 0), ("last", -1)):
            p50, n = self.p50_v2v(hour)
            if p50 is not None:
                out.append(
                    BenchResult(
                        f"voice-to-voice p50, {label} simulated hour",
                        p50,
                        "ms",
                        method + f"; {n} answered turns; end of player speech -> NPC audio",
                    )
                )
        out += self._stall_and_idle_results(method)
        stale = self.of("stale")
        out.append(
            BenchResult(
                "connection events",
                float(len(self.outages_s)),
                "server moves",
                method,
                extra={
                    "move_outage_s": [round(s, 2) for s in self.outages_s],
                    "stall_recovery_s": [round(s, 2) for s in self.stalls_s],
                    "stalls": self.event("stall"),
                    "rejoins": self.rejoins,
                    "deaf_spells": self.event("deaf"),
                    "dave_recoveries": self.event("dave_recovery"),
                    "stale_sender_lines": len(stale),
                    "stale_lines_heard": sum(r.heard_after_s is not None for r in stale),
                    "dm_notices": self.dm_notices,
                    "lane_frames_dropped": self.overflow,
                    "receive_last_connection": self.receive,
                },
            )
        )
        return out

    def _stall_and_idle_results(self, method: str) -> list[BenchResult]:
        out = []
        if self.stalls_s:
            worst = max(self.stalls_s)
            out.append(
                BenchResult(
                    "stall recovered (worst)", worst, "s",
                    method + "; the voice server stops relaying to the bot while a player talks:"
                    " player's SPEAKING -> the bot rejoined and welcomed again",
                    f"<= {STALL_GOAL_S:g} s", worst <= STALL_GOAL_S,
                    {"stalls_s": [round(s, 2) for s in self.stalls_s]},
                )
            )  # fmt: skip
        forget = f"{self.forget_after_s:g} s" if self.forget_after_s else "never"
        for stretch in self.idle:
            how = (
                method + f"; {stretch.seconds / 60:.1f} min of wall-clock time with nobody "
                f"talking, behind a relay that forgets endpoints silent for {forget}"
            )
            after = self._after_idle()
            heard = after is not None and after.answered and after.heard_after_s is not None
            out.append(
                BenchResult(
                    "datagrams the bot sent while idle", stretch.datagrams_per_s, "per second",
                    how + f" ({stretch.datagrams} datagrams, {stretch.keepalives} keepalives)",
                    f"<= {IDLE_DATAGRAMS_GOAL:g}/s",
                    stretch.datagrams_per_s <= IDLE_DATAGRAMS_GOAL,
                )
            )  # fmt: skip
            out.append(
                BenchResult(
                    "CPU while idle", stretch.cpu_share * 100, "% of a core",
                    how + " (the whole process: the bot and the local Discord)",
                    f"<= {IDLE_CPU_GOAL * 100:g} %", stretch.cpu_share <= IDLE_CPU_GOAL,
                )
            )  # fmt: skip
            out.append(
                BenchResult(
                    "first player after the idle stretch heard and answered",
                    after.heard_after_s if after and after.heard_after_s is not None else -1,
                    "s", how + "; first packet sent -> first frame decoded",
                    "heard, answered, and the relay still knew the bot",
                    heard and not stretch.forgotten,
                    {"line": f"{after.line.speaker}: {after.line.text}" if after else None,
                     "relay_forgot_the_bot": stretch.forgotten},
                )
            )  # fmt: skip
        return out

    def _after_idle(self) -> LineResult | None:
        """The first line spoken after the idle stretch (its action's time in the script)."""
        at = self.idle_at
        later = [r for r in self.results if at is not None and r.line.at >= at]
        return min(later, key=lambda r: r.line.at, default=None)
