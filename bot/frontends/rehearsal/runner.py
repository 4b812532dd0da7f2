"""Drive a scene through the real table pipeline, tick by tick.

One tick per 20 ms of scene time: every player pushes a frame (their line's audio, else
silence), DM commands due by then are applied, and one mixer frame is pulled into the session
WAV. At ``speed`` 1 ticks follow the wall clock, so latencies are what a table would feel;
faster speeds compress the scene but not the models (use 1 for latency numbers). What the
scene leaves behind (WAVs, transcript, latency report) is written by
:mod:`bot.frontends.rehearsal.outputs`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.audio.speech import FRAME_MS, SttProvider, TtsProvider, VoiceRouter
from bot.frontends.rehearsal.approvals import ScriptedApprover
from bot.frontends.rehearsal.outputs import RehearsalResult, WavTrack, write_outputs
from bot.frontends.rehearsal.players import synthesize_lines
from bot.frontends.rehearsal.scene import DmCommand, Scene
from bot.frontends.rehearsal.schedule import ScenePlan
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.table import open_table
from bot.table.session.events import SessionEvent
from bot.table.session.session import TableSession
from bot.telemetry.metrics import Metrics
from campaigns.basics import GlyphoxaError
from npcs.campaign import Campaign, load_campaign
from npcs.characters import character_name_problem
from npcs.name_index import name_key

__all__ = ["RehearsalResult", "rehearse"]

log = logging.getLogger(__name__)

_TICK_S = FRAME_MS / 1000
_SETTLE_S = 1.5  # after the last line: let VAD hangover and the final transcript land


def _validate(scene: Scene, campaign: Campaign) -> None:
    for cmd in scene.dm:
        for name in (cmd.npc, cmd.mute, cmd.unmute):
            if name and name.lower() != "all" and campaign.find_npc(name) is None:
                known = ", ".join(sorted(campaign.npcs))
                raise GlyphoxaError(
                    f"scene DM command at {cmd.at:g}s names unknown NPC {name!r}; known: {known}"
                )
    for line in scene.lines:
        if (
            line.expect_npc
            and not line.expects_nobody
            and campaign.find_npc(line.expect_npc) is None
        ):
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

    ``console``: a ``bot.frontends.console.ConsoleHub`` that shows the table live while it plays
    (its "End session" ends the scene early)."""
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
    return write_outputs(scene, out_dir, turns, events, walls, plan, npc_frames, leftovers, cost)


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
    mixed = WavTrack(out_dir / "session.wav")
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


def _pull(session: TableSession, mixed: WavTrack, npc_frames: dict[str, list[bytes]]) -> None:
    """One mixer frame into the session WAV, and into the speaking NPC's own track."""
    holder = session.mixer.current
    before = holder.played_s if holder is not None else 0.0
    frame = session.mixer.next_frame()
    mixed.write(frame)
    voice = session.mixer.last_voice_frame()  # without the ambience under it
    if holder is not None and holder.played_s > before and voice is not None:
        npc_frames.setdefault(holder.npc, []).append(voice)
