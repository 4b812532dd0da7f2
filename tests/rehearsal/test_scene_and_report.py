"""Scene validation, the report writers and the metrics endpoint (no models needed)."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from bot.audio.voice.receive_counters import DropReason, ReceiveCounters
from bot.frontends.rehearsal.report import (
    latency_summary,
    write_chart,
    write_latency_json,
    write_report,
)
from bot.frontends.rehearsal.scene import PlayerLine, load_scene, player_voice
from bot.frontends.rehearsal.steering import dm_notes, tier_checks
from bot.settings.config import MetricsConfig
from bot.table.session.trace import ToolUse, TurnTrace
from bot.telemetry.metrics import Metrics, start_metrics_server
from campaigns.basics import GlyphoxaError, Tier


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scene.yaml"
    path.write_text(text)
    return path


def test_scene_loads_sorts_and_assigns_distinct_voices(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
title: t
players:
  Bram: {provider: espeak, voice: en-us+m3}
lines:
  - {at: 5, speaker: Aria, text: "Greymantle, hello"}
  - {at: 1, speaker: Bram, text: "Bartok, ale!"}
  - {at: 7, speaker: Cole, text: "Hi"}
dm:
  - {at: 9, unmute: Bartok}
  - {at: 3, tier: deep, npc: Greymantle, duration_s: 60}
""",
    )
    scene = load_scene(path)
    assert [line.at for line in scene.lines] == [1, 5, 7]
    assert scene.speakers() == ["Bram", "Aria", "Cole"]
    assert [c.action for c in scene.dm] == ["tier", "unmute"]
    assert scene.dm[0].tier_value is Tier.DEEP
    assert player_voice(scene, "Bram").provider == "espeak"
    voices = {player_voice(scene, s).model_dump_json() for s in scene.speakers()}
    assert len(voices) == 3


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("lines: []", "lines"),
        ("lines:\n  - {at: 1, speaker: A}", "exactly one of 'text' or 'wav'"),
        ("lines:\n  - {at: 1, speaker: A, text: hi, wav: a.wav}", "exactly one"),
        ("lines:\n  - {at: 1, speaker: A, wav: missing.wav}", "WAV file not found"),
        ("lines:\n  - {at: 1, speaker: A, text: hi}\ndm:\n  - {at: 2}", "exactly one of: tier"),
        ("lines:\n  - {at: 1, speaker: A, text: hi}\ndm:\n  - {at: 2, say: hi}", "needs 'npc'"),
        ("lines:\n  - {at: 1, speaker: A, text: hi}\ndm:\n  - {at: 2, tier: slow}", "dm.0.tier"),
        ("lines:\n  - {at: 1, speaker: A, text: hi\n", "invalid YAML"),
        ("lines:\n  - {at: 1, speaker: A, txt: hi}", "txt"),
        (
            "dm_speaker: D\nlines:\n  - {at: 1, speaker: A, text: hi, expect_command: mute all}",
            "expect_command needs the speaker to be the scene's dm_speaker (D), not A",
        ),
        ("lines:\n  - {at: 1, speaker: A, text: hi, expect_tier: slow}", "expect_tier"),
    ],
)
def test_bad_scene_gives_one_clear_error(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(GlyphoxaError, match=r"scene\.yaml") as info:
        load_scene(_write(tmp_path, body))
    assert message in str(info.value)


def test_missing_scene_file(tmp_path: Path) -> None:
    with pytest.raises(GlyphoxaError, match="not found"):
        load_scene(tmp_path / "nope.yaml")


def _turn(turn_id: int, tier: str, v2v_end: float | None, interrupted: bool = False) -> dict:
    trace = TurnTrace(turn_id=turn_id, npc="Bartok", speaker="Aria", heard="ale?", tier=tier)
    trace.speech_end = 10.0
    trace.final_transcript = 10.6
    trace.stt_compute_ms = 100.0
    trace.dequeued = 10.602
    trace.engine_start = 10.605
    trace.first_token = 10.8
    trace.first_sentence = 11.0
    trace.first_audio = 11.2
    trace.tts_compute_ms = 190.0
    trace.playback_start = v2v_end
    trace.tools.append(ToolUse("roll", "ok", 3.0))
    trace.reply = trace.spoken = "Ale it is."
    trace.interrupted = interrupted
    return trace.as_dict()


def test_trace_overhead_subtracts_models_and_waits() -> None:
    turn = _turn(1, "fast", 11.21)
    assert turn["stages_ms"]["voice_to_voice"] == pytest.approx(1210.0)
    # v2v 1210 - stt compute 100 - llm 395 - tts 190 - endpointing wait 500 = 25 ms of our own
    assert turn["overhead_ms"] == pytest.approx(25.0, abs=0.1)
    assert turn["stages_ms"]["queue"] == pytest.approx(2.0)


def test_waiting_for_the_npcs_previous_answer_is_not_overhead() -> None:
    trace = TurnTrace(turn_id=1, npc="Bartok", speaker="Aria", heard="and?", tier="fast")
    trace.speech_end, trace.final_transcript, trace.stt_compute_ms = 10.0, 10.6, 100.0
    trace.dequeued, trace.engine_start = 12.6, 12.601  # Bartok was still answering for 2 s
    trace.first_sentence, trace.first_audio, trace.tts_compute_ms = 13.0, 13.2, 190.0
    trace.playback_start = 13.21
    stages = trace.stages_ms()
    assert stages["queue"] == pytest.approx(2000.0) and stages["route"] == pytest.approx(1.0)
    # 3210 - 100 - 399 - 190 - 500 (endpointing) - 1995 (queue beyond 5 ms) = 26 ms
    assert trace.overhead_ms() == pytest.approx(26.0, abs=0.1)


def test_report_files(tmp_path: Path) -> None:
    turns = [_turn(1, "fast", 11.21), _turn(2, "standard", 11.5, True), _turn(3, "fast", None)]
    summary = write_latency_json(tmp_path / "latency.json", turns)
    data = json.loads((tmp_path / "latency.json").read_text())
    assert data["summary"]["turns"] == 3 and data["summary"]["interrupted"] == 1
    assert summary["voice_to_voice_fast_ms"]["n"] == 1
    assert summary["stages"]["voice_to_voice"]["p95"] == pytest.approx(1500.0)
    assert latency_summary([])["overhead_ms"] is None
    assert write_chart(tmp_path / "latency.png", turns, "t")
    assert (tmp_path / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not write_chart(tmp_path / "none.png", [turns[2]])
    write_report(
        tmp_path / "report.md",
        title="t",
        turns=turns,
        summary=summary,
        outputs={"session.wav": "mix"},
        checks=["ok"],
    )
    text = (tmp_path / "report.md").read_text()
    assert "**Bartok**" in text and "(interrupted)" in text and "roll=ok" in text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_metrics_endpoint_serves_recorded_values() -> None:
    metrics = Metrics()
    metrics.observe_turn({"voice_to_voice": 812.0, "stt_final": None})
    metrics.observe_tool("ok", "fast")
    metrics.observe_tool("timeout", "deep")
    metrics.packets.labels("decrypt_failed").inc(2)
    counters = ReceiveCounters(received=10)
    counters.dropped[DropReason.UNKNOWN_SSRC] = 1
    counters.dropped[DropReason.DAVE_FAILED] = 1
    detach = metrics.track_receiver(lambda: counters)
    metrics.active_speakers.set(3)
    assert start_metrics_server(MetricsConfig(enabled=False), metrics) is None
    server = start_metrics_server(MetricsConfig(enabled=True, port=_free_port()), metrics)
    assert server is not None
    try:
        with urllib.request.urlopen(server.url, timeout=5) as response:
            body = response.read().decode()
    finally:
        server.close()
    assert 'glyphoxa_turn_stage_seconds_count{stage="voice_to_voice"} 1.0' in body
    assert 'glyphoxa_tier_tool_calls_total{status="timeout",tier="deep"} 1.0' in body
    assert 'glyphoxa_voice_packets_total{outcome="decrypt_failed"} 3.0' in body
    assert 'glyphoxa_voice_packets_total{outcome="dropped"} 1.0' in body
    assert 'glyphoxa_voice_packets_total{outcome="received"} 10.0' in body
    detach()
    assert 'glyphoxa_voice_packets_total{outcome="received"} 0.0' in metrics.exposition()
    assert "glyphoxa_active_speakers 3.0" in body
    assert metrics.sample("glyphoxa_stt_seconds_count", {"kind": "final"}) is None


def test_metrics_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(GlyphoxaError, match=r"metrics\.port"):
            start_metrics_server(MetricsConfig(enabled=True, port=port), Metrics())


def test_part_registries_attach_and_detach_per_table() -> None:
    from prometheus_client import CollectorRegistry, Counter

    metrics = Metrics()
    line = 'glyphoxa_tool_calls_total{status="ok",tool="roll"} 1.0'
    for _ in range(2):  # a second table after the first closed: no duplicate-series error
        first, second = CollectorRegistry(), CollectorRegistry()
        counters = [
            Counter("glyphoxa_tool_calls", "calls", ["tool", "status"], registry=registry)
            for registry in (first, second)
        ]
        counters[0].labels("roll", "ok").inc()
        detach_first = metrics.attach(first)
        detach_second = metrics.attach(second)  # same names while the first runs: skipped
        assert line in metrics.exposition()
        detach_second()
        detach_first()
        assert "glyphoxa_tool_calls_total" not in metrics.exposition()
    assert line not in metrics.exposition()


@pytest.mark.parametrize(
    ("text", "voiced"),
    [
        ("Two coppers, friend.", "Two coppers, friend."),
        ("&amp;#34;Ale&#34; is **cheap** here!", '"Ale" is cheap here!'),
        ("```python", ""),
        ("# The `Rusty`  Flagon", "The Rusty Flagon"),
        ("...", ""),
    ],
)
def test_only_speakable_text_reaches_the_voice(text: str, voiced: str) -> None:
    from bot.table.session.turns import speakable

    assert speakable(text) == voiced


async def test_players_without_espeak_fall_back_to_piper(tmp_path: Path) -> None:
    from bot.audio.speech import EspeakTts, PiperTts, VoiceRouter
    from bot.frontends.rehearsal.players import synthesize_lines

    scene = load_scene(
        _write(
            tmp_path,
            "players:\n  Tobble: {provider: espeak, voice: en-us+m3}\n"
            "lines:\n  - {at: 1, speaker: Tobble, text: Hello there.}\n",
        )
    )
    router = VoiceRouter({"piper": PiperTts(), "espeak": EspeakTts("espeak-ng-not-here")})
    notes: list[str] = []
    (line,) = await synthesize_lines(scene, router, notes.append)
    assert line.frames > 20 and 0.3 < line.voiced_end_s < line.frames * 0.02
    assert any("using Piper" in note for note in notes)


def test_tier_checks_and_dm_notes() -> None:
    line = PlayerLine(at=1, speaker="Arin", text="Grey, hi", expect_tier="deep")
    routed = {"tier": "deep", "tier_reason": "DM override deep for Greymantle, 290s left"}
    assert tier_checks(line, routed) == [
        ("tier", "deep", "deep (DM override deep for Greymantle, 290s left)", True)
    ]
    assert tier_checks(line, {"tier": None, "tier_reason": None}) == [
        ("tier", "deep", "no turn", False)
    ]
    command = PlayerLine(at=2, speaker="Dana", text="x", expect_command="mute Bartok")
    assert tier_checks(command, {"reason": "DM voice command: mute Bartok"})[0][3]
    assert tier_checks(command, {"reason": "named Bartok"})[0][2:] == ("no command", False)
    records = [
        {
            "t": 3.0,
            "type": "dm",
            "action": "mute",
            "detail": "Bartok",
            "heard": "Dana: Bartok, hush",
        },
        {"t": 4.0, "type": "dm", "action": "say", "detail": "Bartok: Hi", "heard": None},
        {"t": 5.0, "type": "routed"},
    ]
    assert dm_notes(records) == [
        "DM 3.0s: mute Bartok (by voice, heard \u201cDana: Bartok, hush\u201d)",
        "DM 4.0s: say Bartok: Hi (scripted)",
    ]
