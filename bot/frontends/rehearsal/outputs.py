"""What a rehearsal leaves in its output folder, and the result handed back to the caller.

The scene driver (:mod:`bot.frontends.rehearsal.runner`) collects the session's events, the wall
time of every tick and each NPC's voice frames; this module turns them into the files a DM opens
after a rehearsal: ``session.wav`` (everything the table heard), one ``npc-<name>.wav`` per NPC,
``transcript.jsonl`` (every record timed in scene seconds), ``latency.json`` and
``latency.png``, and ``report.md`` with the verdict and the scene's checks. Kept apart from the
driver so the tick loop reads as timing alone and the file formats live in one place.
"""

from __future__ import annotations

import bisect
import json
import logging
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.audio.speech import CHANNELS, FRAME_MS, SAMPLE_RATE
from bot.frontends.rehearsal.checks import Check, scene_checks, verdict
from bot.frontends.rehearsal.report import write_chart, write_latency_json, write_report
from bot.frontends.rehearsal.scene import Scene
from bot.frontends.rehearsal.schedule import ScenePlan
from bot.frontends.rehearsal.steering import dm_notes
from bot.frontends.rehearsal.turn_taking import turn_taking
from bot.table.session.events import (
    BargedIn,
    DmAction,
    NpcSpoke,
    PlayerSpoke,
    Routed,
    SessionEvent,
    TableAlert,
    TurnEnded,
)

__all__ = ["RehearsalResult", "WavTrack", "transcript_records", "write_outputs"]

log = logging.getLogger(__name__)

_TICK_S = FRAME_MS / 1000


@dataclass(slots=True)
class RehearsalResult:
    """What a rehearsal produced: the per-turn traces, the latency summary, the transcript
    records, the scene's checks and where each output file was written."""

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


class WavTrack:
    """A 48 kHz stereo 16-bit WAV written one 20 ms frame at a time."""

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


def write_outputs(
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
    """Write every output file of a played scene into ``out_dir`` and judge the scene."""
    records = transcript_records(events, walls, plan)
    with (out_dir / "transcript.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    npc_wavs: dict[str, Path] = {}
    npc_audio_s: dict[str, float] = {}
    for npc, frames in npc_frames.items():
        path = out_dir / f"npc-{npc.lower().replace(' ', '-')}.wav"
        wav = WavTrack(path)
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


def transcript_records(
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
                 "heard": event.heard, "by": event.by}
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
