"""Run a scene through the real table pipeline and write what happened.

One tick per 20 ms of scene time: every player pushes a frame (their line's audio, else
silence), DM commands due by then are applied, and one mixer frame is pulled into the session
WAV. At ``speed`` 1 ticks follow the wall clock, so latencies are what a table would feel;
faster speeds compress the scene but not the models (use 1 for latency numbers).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.assembly.table import open_table
from bot.config import GlyphoxaConfig
from bot.metrics import Metrics
from bot.rehearsal.approvals import ScriptedApprover
from bot.rehearsal.checks import Check, scene_checks, verdict
from bot.rehearsal.players import synthesize_lines
from bot.rehearsal.report import write_chart, write_latency_json, write_report
from bot.rehearsal.scene import DmCommand, Scene
from bot.rehearsal.schedule import ScenePlan
from bot.rehearsal.steering import dm_notes
from bot.rehearsal.turn_taking import turn_taking
from bot.session.events import (
    BargedIn,
    DmAction,
    NpcSpoke,
    PlayerSpoke,
    Routed,
    SessionEvent,
    TableAlert,
    TurnEnded,
)
from bot.session.session import TableSession
from bot.speech import CHANNELS, FRAME_MS, SAMPLE_RATE, SttProvider, TtsProvider, VoiceRouter
from campaigns.basics import GlyphoxaError
from npcs.campaign import Campaign, load_campaign
from npcs.characters import character_name_problem
from npcs.name_index import name_key

__all__ = ["RehearsalResult", "rehearse"]

log = logging.getLogger(__name__)

_TICK_S = FRAME_MS / 1000
_SETTLE_S = 1.5  # after the last line: let VAD hangover and the final transcript land


@dataclass(slots=True)
class RehearsalResult:
    out_dir: Path
    turns: list[dict[str, Any]]
    summary: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    """The report's first lines: PASS, or FAIL and what failed."""
    npc_audio_s: dict[str, float] = field(default_factory=dict)
    session_wav: Path | None = None
    npc_wavs: dict[str, Path] = field(default_factory=dict)

    @property
    def failed_checks(self) -> int:
        return sum(not check.ok for check in self.checks)


class _Wav:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._wav = wave.open(str(path), "wb")
        self._wav.setnchannels(CHANNELS)
        self._wav.setsampwidth(2)
        self._wav.setframerate(SAMPLE_RATE)
        self.frames = 0

    def write(self, frame: bytes) -> None:
        self._wav.writeframes(frame)
        self.frames += 1

    def close(self) -> None:
        self._wav.close()


def _validate(scene: Scene, campaign: Campaign) -> None:
    for cmd in scene.dm:
        for name in (cmd.npc, cmd.mute, cmd.unmute):
            if name and name.lower() != "all" and campaign.find_npc(name) is None:
                known = ", ".join(sorted(campaign.npcs))
                raise GlyphoxaError(
                    f"scene DM command at {cmd.at:g}s names unknown NPC {name!r}; known: {known}"
                )
    for line in scene.lines:
        if line.expect_npc and campaign.find_npc(line.expect_npc) is None:
            raise GlyphoxaError(f"line at {line.at:g}s expects unknown NPC {line.expect_npc!r}")
    played: dict[str, str] = {}
    for speaker, character in scene.characters.items():
        problem = character_name_problem(character, campaign.npcs.values())
        other = played.setdefault(name_key(character), speaker)
        if problem is None and other != speaker:
            problem = f"character name '{character}' is already played by {other}"
        if problem is not None:
            raise GlyphoxaError(f"scene characters.{speaker}: {problem}")


def _speaker_ids(plan: ScenePlan) -> dict[str, str]:
    """Each speaker's id, as a Discord user id is a player's."""
    return {name: f"player-{n}" for n, name in enumerate(plan.timelines, 1)}


def _prepare_out(out_dir: Path) -> Path:
    """Create the output folder; the rehearsal's own memory database starts empty."""
    out_dir.mkdir(parents=True, exist_ok=True)
    memory_db = out_dir / "memory.db"
    memory_db.unlink(missing_ok=True)
    return memory_db


def _apply(session: TableSession, cmd: DmCommand) -> None:
    if cmd.tier is not None:
        session.controls.set_tier_override(cmd.tier_value, npc=cmd.npc, duration_s=cmd.duration_s)
    elif cmd.mute is not None:
        session.controls.mute(None if cmd.mute.lower() == "all" else cmd.mute)
    elif cmd.unmute is not None:
        session.controls.unmute(None if cmd.unmute.lower() == "all" else cmd.unmute)
    elif cmd.say is not None and cmd.npc is not None:
        session.controls.say(cmd.npc, cmd.say)


async def rehearse(
    scene: Scene,
    config: GlyphoxaConfig,
    out_dir: Path,
    *,
    speed: float = 1.0,
    playout_speed: float | None = None,
    progress: Callable[[str], None] | None = None,
    llm_base_url: str | None = None,
    stt: SttProvider | None = None,
    tts: TtsProvider | None = None,
    metrics: Metrics | None = None,
    console: Any = None,
) -> RehearsalResult:
    """Play ``scene`` through the real pipeline; write every output into ``out_dir``.

    ``console``: a ``bot.console.ConsoleHub`` that shows the table live while it plays (its
    "End session" ends the scene early)."""
    if speed <= 0:
        raise GlyphoxaError("--speed must be positive")
    say = progress or (lambda message: log.info("%s", message))
    campaign = load_campaign(scene.campaign_dir() or config.campaign.path)
    _validate(scene, campaign)
    memory_db = _prepare_out(out_dir)
    tts = tts or VoiceRouter.from_config(config.providers.tts)
    plan = ScenePlan(scene, await synthesize_lines(scene, tts, say))
    events: list[tuple[float, SessionEvent]] = []
    async with open_table(
        config,
        campaign=campaign,
        memory_url=f"sqlite+aiosqlite:///{memory_db}",
        llm_base_url=llm_base_url,
        stt=stt,
        tts=tts,
        metrics=metrics or Metrics(),
        title=scene.title,
        progress=say,
        dm_speakers=[scene.dm_speaker] if scene.dm_speaker else (),
    ) as session:
        session.listeners.append(lambda event: events.append((time.monotonic(), event)))
        ids = _speaker_ids(plan)
        for speaker, character in scene.characters.items():  # as /iam does at a Discord table
            await session.bind_character(ids[speaker], character, bound_by="the scene")
        if session.tools is not None:  # the scene's scripted DM answers approval questions
            session.tools.approvals.configure(
                approver=ScriptedApprover(scene.approvals, speed=speed)
            )
        ending = asyncio.Event()
        feed = None
        if console is not None:

            async def end() -> None:
                ending.set()

            feed = console.attach(session, f"Rehearsal: {scene.title}", on_end=end)
        if session.warm_up is not None:  # a table would still be greeting; latency is measured
            say("warming up the LLM's prompt cache (each NPC's persona and tools)")
            await asyncio.wait([session.warm_up])
        say(f"playing scene '{scene.title}' at {speed:g}x")
        try:
            walls, npc_frames = await _play(
                session, plan, out_dir, speed, max(speed, playout_speed or speed), say, ending
            )
        finally:
            if feed is not None:
                await console.detach(feed)
        await session.recorder.flush()
        turns = [trace.as_dict() for trace in session.traces]
        leftovers = _leftovers(session, plan)
        cost = session.spend.summary() if session.spend is not None else None
    say("writing outputs")
    return _write_outputs(scene, out_dir, turns, events, walls, plan, npc_frames, leftovers, cost)


def _leftovers(session: TableSession, plan: ScenePlan) -> list[str]:
    """What the scene's end left undone: queued or running turns, unheard players, DM lines."""
    left = []
    if queued := session.turns.depth():
        left.append(f"{queued} NPC turn(s) still queued when the scene ended")
    if running := len(session.turns.running()):
        left.append(f"{running} NPC turn(s) still running when the scene ended")
    if session.listening:
        left.append("a player's words were still being transcribed when the scene ended")
    if plan.dm_pending:
        left.append("DM command(s) never ran (the scene ended first)")
    return left


async def _play(
    session: TableSession,
    plan: ScenePlan,
    out_dir: Path,
    speed: float,
    playout_speed: float,
    say: Callable[[str], None],
    ending: asyncio.Event | None = None,
) -> tuple[list[float], dict[str, list[bytes]]]:
    """Tick until the scene is over; returns the wall time of every tick and the NPC frames.

    ``playout_speed`` > ``speed`` pulls an NPC's already-synthesized speech faster while no
    player audio is in flight (it changes no latency: the next line waits for quiet anyway).
    """
    mixed = _Wav(out_dir / "session.wav")
    npc_frames: dict[str, list[bytes]] = {}
    speakers = _speaker_ids(plan)
    settle = round(_SETTLE_S / _TICK_S)
    tail = round(plan.scene.tail_s / _TICK_S)
    ended_input: asyncio.Task[None] | None = None
    t0 = next_at = time.monotonic()
    walls: list[float] = []
    next_report = t0 + 5.0
    k = 0
    progress_at = t0  # wall time of the last line start or audible NPC frame
    # nobody waits for players chatting among themselves
    table_talk = {plan.scene.called(name) for name in plan.scene.table_talkers()}
    try:
        while True:
            quiet = not session.busy and not session.lanes.listening_except(table_talk)
            for cmd in plan.due_commands(k, quiet=quiet):
                try:
                    _apply(session, cmd)
                except GlyphoxaError as error:
                    log.warning("DM command at %gs failed: %s", cmd.at, error)
            for item in plan.advance(k, quiet=quiet, npc_audible=session.mixer.npc_speaking):
                progress_at = time.monotonic()
                say(f"  {k * _TICK_S:5.1f}s {item.line.speaker}: {item.line.text or item.line.wav}")
            if session.mixer.npc_speaking:
                progress_at = time.monotonic()
            stalled = time.monotonic() - progress_at > plan.scene.tail_s
            if ending is not None and ending.is_set():
                say(f"  {k * _TICK_S:5.1f}s the DM ended the session in the console")
                break
            if not plan.all_started and stalled:
                say(f"  gave up: no NPC audio for {plan.scene.tail_s:g}s while lines wait")
                break
            if ended_input is None:
                for name, timeline in plan.timelines.items():
                    session.push_frame(speakers[name], name, timeline.frame(k))
                if plan.all_started and k >= plan.audio_end_frame + settle:
                    ended_input = asyncio.create_task(session.end_input(), name="rehearsal:end")
                    tail_end = k + tail
            walls.append(time.monotonic())
            _pull(session, mixed, npc_frames)
            k += 1
            playing_out = (
                k > plan.audio_end_frame + settle
                and session.mixer.npc_speaking
                and not session.mixer.starved
                and not session.listening
            )
            next_at += _TICK_S / (playout_speed if playing_out else speed)
            if ended_input is not None:
                idle = ended_input.done() and not session.busy and not plan.dm_pending
                if idle or (k >= tail_end and stalled):
                    break
            now = time.monotonic()
            if now >= next_report:
                next_report = now + 5.0
                say(f"  scene {k * _TICK_S:5.1f}s, NPC turns done: {len(session.traces)}")
            await asyncio.sleep(max(0.0, next_at - now))
        if ended_input is not None and not ended_input.done():
            ended_input.cancel()
    finally:
        mixed.close()
    return walls, npc_frames


def _pull(session: TableSession, mixed: _Wav, npc_frames: dict[str, list[bytes]]) -> None:
    """One mixer frame into the session WAV, and into the speaking NPC's own track."""
    holder = session.mixer.current
    before = holder.played_s if holder is not None else 0.0
    frame = session.mixer.next_frame()
    mixed.write(frame)
    voice = session.mixer.last_voice_frame()  # without the ambience under it
    if holder is not None and holder.played_s > before and voice is not None:
        npc_frames.setdefault(holder.npc, []).append(voice)


def _write_outputs(
    scene: Scene,
    out_dir: Path,
    turns: list[dict[str, Any]],
    events: list[tuple[float, SessionEvent]],
    walls: list[float],
    plan: ScenePlan,
    npc_frames: dict[str, list[bytes]],
    leftovers: list[str],
    cost: dict[str, Any] | None = None,
) -> RehearsalResult:
    records = _transcript(events, walls, plan)
    with (out_dir / "transcript.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    npc_wavs: dict[str, Path] = {}
    npc_audio_s: dict[str, float] = {}
    for npc, frames in npc_frames.items():
        path = out_dir / f"npc-{npc.lower().replace(' ', '-')}.wav"
        wav = _Wav(path)
        for frame in frames:
            wav.write(frame)
        wav.close()
        npc_wavs[npc] = path
        npc_audio_s[npc] = round(len(frames) * _TICK_S, 2)
    summary = write_latency_json(out_dir / "latency.json", turns, turn_taking(records), cost)
    chart = write_chart(out_dir / "latency.png", turns, f"Rehearsal: {scene.title}")
    checks = scene_checks(plan, records, turns, leftovers)
    head = verdict(checks, turns)
    outputs = {
        "session.wav": "everything the table heard (NPC voices and ambience), 48 kHz stereo",
        **{p.name: f"{npc}'s voice only ({npc_audio_s[npc]:.1f} s)" for npc, p in npc_wavs.items()},
        "transcript.jsonl": "player lines (scripted and as heard), routing, NPC replies, DM",
        "latency.json": "per-turn stage breakdown and p50/p95 summary (and the cost)",
    }
    if chart:
        outputs["latency.png"] = "voice-to-voice latency per turn, stacked by stage"
    write_report(
        out_dir / "report.md",
        title=scene.title,
        turns=turns,
        summary=summary,
        outputs=outputs,
        checks=[str(check) for check in checks],
        verdict=head,
        alerts=[r["message"] for r in records if r["type"] == "alert"],
        notes=dm_notes(records),
    )
    return RehearsalResult(
        out_dir=out_dir,
        turns=turns,
        summary=summary,
        events=records,
        checks=checks,
        verdict=head,
        npc_audio_s=npc_audio_s,
        session_wav=out_dir / "session.wav",
        npc_wavs=npc_wavs,
    )


def _transcript(
    events: list[tuple[float, SessionEvent]], walls: list[float], plan: ScenePlan
) -> list[dict[str, Any]]:
    """Every record timed in scene seconds: the tick that was current at its wall time."""

    def rel(at: float | None) -> float | None:
        return None if at is None else round(bisect.bisect_right(walls, at) * _TICK_S, 3)

    records: list[dict[str, Any]] = []
    for index, start in plan.started.items():
        item = plan.lines[index]
        at = start * _TICK_S
        records.append(
            {"t": round(at, 3), "type": "scripted", "speaker": plan.scene.called(item.line.speaker),
             "text": item.line.text or f"(wav {item.line.wav})",
             "speech_end": round(at + item.voiced_end_s, 3), "planned_at": item.line.at}
        )  # fmt: skip
    for at, event in events:
        if isinstance(event, PlayerSpoke):
            records.append(
                {"t": rel(at), "type": "heard", "speaker": event.speaker, "text": event.text,
                 "speech_start": rel(event.speech_start), "speech_end": rel(event.speech_end)}
            )  # fmt: skip
        elif isinstance(event, Routed):
            records.append(
                {"t": rel(at), "type": "routed", "speaker": event.speaker, "text": event.text,
                 "npcs": list(event.npcs), "reason": event.reason, "tier": event.tier,
                 "tier_reason": event.tier_reason}
            )  # fmt: skip
        elif isinstance(event, NpcSpoke):
            trace = event.trace
            records.append(
                {"t": rel(trace.playback_start or at), "type": "npc", "npc": trace.npc,
                 "speaker": trace.speaker, "text": trace.spoken, "reply": trace.reply,
                 "interrupted": trace.interrupted, "tier": trace.tier,
                 "tier_reason": trace.tier_reason,
                 "tools": [t.name for t in trace.tools], "turn": trace.turn_id,
                 "error": trace.error, "fallback": trace.fallback,
                 "reaction_to": trace.reaction_to, "dropped": trace.dropped}
            )  # fmt: skip
        elif isinstance(event, BargedIn):
            records.append(
                {"t": rel(at), "type": "barge_in", "speaker": event.speaker, "npc": event.npc,
                 "heard": event.heard}
            )  # fmt: skip
        elif isinstance(event, DmAction):
            records.append(
                {"t": rel(at), "type": "dm", "action": event.action, "detail": event.detail,
                 "heard": event.heard}
            )  # fmt: skip
        elif isinstance(event, TurnEnded):
            wait = None if event.speech_end is None else (event.at - event.speech_end) * 1000
            records.append(
                {"t": rel(at), "type": "turn_end", "speaker": event.speaker,
                 "speech_start": rel(event.speech_start), "speech_end": rel(event.speech_end),
                 "reason": event.reason, "silence_ms": event.silence_ms,
                 "wait_ms": None if wait is None else round(wait, 1)}
            )  # fmt: skip
        elif isinstance(event, TableAlert):
            records.append({"t": rel(at), "type": "alert", "npc": event.npc,
                            "message": event.message})  # fmt: skip
    records.sort(key=lambda r: (r["t"] is None, r["t"] or 0.0))
    return records
