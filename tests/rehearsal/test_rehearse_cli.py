"""``glyphoxa rehearse`` end to end with real Whisper, Piper, espeak-ng, tools and memory, and a
scripted OpenAI-compatible server (real HTTP + SSE) as the LLM, so the run is deterministic and
needs no llama.cpp: a tool call, a barge-in, a DM line, every output file."""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
import wave
from difflib import SequenceMatcher
from pathlib import Path

import numpy as np
import pytest
import soxr
import yaml
from scripted_config import scripted_config

from bot.audio.speech import FasterWhisperStt
from bot.bench.doubles.instant_llm import ANSWERS, InstantLlm
from bot.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing"),
]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def _transcribe(path: Path) -> str:
    with wave.open(str(path)) as wav:
        rate = wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    stereo = np.frombuffer(raw, dtype="<i2").reshape(-1, 2).astype(np.float32) / 32768
    mono = soxr.resample(stereo.mean(axis=1), rate, 16_000).astype(np.float32)
    return FasterWhisperStt().transcribe_sync(mono)


def test_rehearse_command_end_to_end(tmp_path: Path, llm: InstantLlm) -> None:
    config = scripted_config(tmp_path, llm)
    scene = tmp_path / "scene.yaml"
    scene.write_text(
        yaml.safe_dump(
            {
                "title": "scripted",
                "campaign": str(EXAMPLE),
                "players": {"Tobble": {"provider": "espeak", "voice": "en-us+m3"}},
                # Cole has addressed nobody, so his interruption routes to no NPC
                "lines": [
                    {
                        "at": 0.5,
                        "speaker": "Arin",
                        "text": "Bartok, what's on tap tonight?",
                        "expect_npc": "Bartok",
                        "expect_tools": ["roll"],
                    },
                    {
                        "at": 2,
                        "speaker": "Tobble",
                        "text": "Greymantle, tell me about the Black Candle.",
                        "expect_npc": "Greymantle",
                    },
                    {
                        "at": 3,
                        "speaker": "Cole",
                        "text": "Wait, someone is at the door!",
                        "interrupt": True,
                    },
                ],
                "dm": [{"at": 4, "say": "Last call, friends!", "npc": "Bartok"}],
                "tail_s": 60,
            }
        )
    )
    out = tmp_path / "out"
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out),
                 "--playout-speed", "8"])  # fmt: skip
    assert code == 0  # every check passed: routing, answers with audio, Bartok's roll
    records = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    npc_lines = [r for r in records if r["type"] == "npc"]
    assert [r["npc"] for r in npc_lines] == ["Bartok", "Greymantle", "Bartok"]
    bartok, greymantle, last_call = npc_lines
    # the tool round: Bartok's FAST tools were offered, roll ran, its result went back
    assert bartok["tools"] == ["roll"] and bartok["text"] == ANSWERS["Bartok"]
    bartok_requests = [r for r in llm.requests if "You are Bartok" in r["messages"][0]["content"]]
    offered = {t["function"]["name"] for t in bartok_requests[0]["tools"]}
    assert offered == {"roll", "roll_table", "query_entities"}
    assert any(m["role"] == "tool" for r in bartok_requests for m in r["messages"])
    # the barge-in cut Greymantle; only the words heard were kept
    (barge,) = [r for r in records if r["type"] == "barge_in"]
    assert barge["npc"] == "Greymantle" and greymantle["interrupted"]
    assert ANSWERS["Greymantle"].startswith(greymantle["text"])
    assert greymantle["text"] != ANSWERS["Greymantle"]
    assert last_call["text"] == "Last call, friends!"
    latency = json.loads((out / "latency.json").read_text())
    assert latency["summary"]["turns"] == 3 and latency["summary"]["interrupted"] == 1
    assert all(t["overhead_ms"] is not None for t in latency["turns"] if t["heard"])
    assert (out / "latency.png").stat().st_size > 1000
    assert "Bartok" in (out / "report.md").read_text()
    # Bartok's own track says what he said, and nobody else's words. Piper samples noise, so each
    # run's audio differs a little and Whisper tiny hears "is on tap" as "was untapped" or "last"
    # as "west" now and then: letters are compared, not whole words (0.84-0.9 for such runs,
    # about 0.25 for Greymantle's answer or a track that stops after three words).
    heard = " ".join(_words(_transcribe(out / "npc-bartok.wav")))
    said = " ".join(_words(ANSWERS["Bartok"] + " Last call, friends!"))
    other = " ".join(_words(ANSWERS["Greymantle"]))
    assert SequenceMatcher(None, said, heard).ratio() >= 0.7, heard
    assert SequenceMatcher(None, other, heard).ratio() < 0.5, heard


def test_rehearse_stops_in_seconds_with_the_doctor_line_when_the_llm_is_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before a scene is played, every model service is asked: an unreachable one stops the
    rehearsal at once (it played the whole scene with every turn failing, 50 s)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(yaml.safe_dump({
        "providers": {"llm": {"name": "openai", "base_url": f"http://127.0.0.1:{closed}/v1"}},
        "campaign": {"path": str(EXAMPLE), "hot_reload": False},
    }))  # fmt: skip
    out = tmp_path / "out"
    started = time.monotonic()
    code = main(["--config", str(config), "rehearse", str(EXAMPLE / "scene.yaml"),
                 "--out", str(out)])  # fmt: skip
    took = time.monotonic() - started
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and took < 10, (took, err)
    assert re.fullmatch(
        r"FAIL  llm +\d+\.\d\d s  LLM server unreachable at "
        + re.escape(f"http://127.0.0.1:{closed}/v1 -> fix: check providers.llm.base_url ")
        + "and that the server runs",
        err[-2],
    ), err
    assert err[-1] == (
        "rehearse: stopped before starting: llm cannot be reached (fix it and see glyphoxa "
        "doctor, or add --anyway to rehearse without it)"
    )
    assert not out.exists()  # nothing played, nothing written


def test_rehearse_anyway_fails_loudly_and_names_the_cause_when_the_llm_is_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(yaml.safe_dump({
        "providers": {"llm": {"name": "local", "base_url": f"http://127.0.0.1:{closed}/v1"}},
        "campaign": {"path": str(EXAMPLE), "hot_reload": False},
        "tools": {"sandbox_dir": str(tmp_path / "files"),
                  "calibration_path": str(tmp_path / "calibration.json")},
    }))  # fmt: skip
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump({
        "campaign": str(EXAMPLE),
        "lines": [{"at": 0.5, "speaker": "Arin", "text": "Bartok, what's on tap tonight?",
                   "expect_npc": "Bartok"}],
        "tail_s": 30,
    }))  # fmt: skip
    out = tmp_path / "out"
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out), "--anyway"])
    assert code == 1
    captured = capsys.readouterr()
    assert "rehearse: campaign ok; model services: stt (" in captured.err
    cause = f"LLM server unreachable at http://127.0.0.1:{closed}/v1/: check providers.llm.base_url"
    report = (out / "report.md").read_text().splitlines()
    assert report[2].startswith("**FAIL**: ") and "1 of 1 NPC turns failed" in report[2]
    assert report[3].startswith(f"- cause: {cause}")
    told = report[report.index("## What the DM was told") + 2]
    assert told.startswith('- Bartok could not answer (said "') and cause in told
    (answer,) = [json.loads(r) for r in (out / "transcript.jsonl").read_text().splitlines()
                 if json.loads(r)["type"] == "npc"]  # fmt: skip
    bartok_fillers = yaml.safe_load((EXAMPLE / "npcs" / "bartok.yaml").read_text())["filler_lines"]
    assert answer["fallback"] in bartok_fillers and answer["text"]  # he said it out loud
    assert (out / "npc-bartok.wav").stat().st_size > 10_000
    printed = captured.out.strip().splitlines()
    assert printed[-2].startswith("FAIL: ") and printed[-1].startswith(f"- cause: {cause}")
