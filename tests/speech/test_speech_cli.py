"""``glyphoxa say`` and ``glyphoxa transcribe`` end to end (real Piper, real Whisper)."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import pytest

from bot.audio.speech import Vocabulary
from bot.cli import main
from npcs.campaign import load_campaign

from .speech_helpers import heard_as

CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "example"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(f"campaign:\n  path: {CAMPAIGN}\n")
    return path


def test_say_in_an_npc_voice_then_transcribe_it_back(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bartok.wav"
    text = "Welcome to the Rusty Flagon. The stew is hot tonight."
    assert main(["--config", str(config), "say", "--npc", "bartok", text, "--out", str(out)]) == 0
    assert "Bartok (piper) said" in capsys.readouterr().out
    with wave.open(str(out)) as wav:
        assert (wav.getframerate(), wav.getnchannels()) == (48_000, 2)
        assert wav.getnframes() > 48_000 * 2
    assert main(["--config", str(config), "transcribe", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    heard = " ".join(line.split("] ", 1)[1] for line in printed)
    # Heard with the campaign's vocabulary: its words are spelt as the campaign spells them
    # ("Rusty Flagon", never "rusty flag on"). Whether Whisper hears the name at all depends
    # on the voice's sampled prosody and the CPU, so that is not asserted, only the spelling.
    vocabulary = Vocabulary.from_campaign(load_campaign(CAMPAIGN))
    assert vocabulary.correct(heard) == heard, heard
    assert heard_as(text, heard, 0.2)
    assert main(["--config", str(config), "transcribe", str(out), "--json"]) == 0
    transcript = json.loads(capsys.readouterr().out)["transcript"]
    assert " ".join(item["text"] for item in transcript) == heard
    assert all(0 <= item["start"] < item["end"] for item in transcript)


def test_say_with_voice_flags_needs_no_campaign(tmp_path: Path) -> None:
    out = tmp_path / "espeak.wav"
    args = ["say", "--voice-provider", "piper", "--speed", "1.3", "--pitch", "3", "Hi there."]
    assert main([*args, "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_user_errors_are_one_clean_line(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "x.wav")
    assert main(["--config", str(config), "say", "--npc", "Nobody", "hi", "--out", out]) == 2
    assert "no NPC named 'Nobody'" in capsys.readouterr().err
    assert main(["say", "--speed", "7", "hi", "--out", out]) == 2
    assert capsys.readouterr().err.startswith("error: invalid voice setting speed")
    assert main(["transcribe", str(tmp_path / "missing.wav")]) == 2
    assert "audio file not found" in capsys.readouterr().err
    silent = tmp_path / "silent.wav"
    with wave.open(str(silent), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
        wav.writeframes(bytes(32_000))
    assert main(["transcribe", str(silent), "--model", "large-v9"]) == 2
    assert "not available offline" in capsys.readouterr().err
