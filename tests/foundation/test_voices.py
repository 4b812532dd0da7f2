"""NPC voices are checked against what is installed: ``glyphoxa check``, ``glyphoxa voices``,
table start-up and hot reload refuse a voice that does not exist, and a voice that breaks while
the table runs is spoken by espeak-ng loudly (an error log and an alert for the DM)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import yaml

from bot.audio.speech import OpenAiStt, PiperTts, VoiceRouter
from bot.cli import main
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.table import open_table
from bot.table.session.builder import build_session
from bot.telemetry.metrics import Metrics
from campaigns.memory import MemoryStore
from campaigns.providers.voices import VoiceSettings, bundled_piper_models
from campaigns.yamlio import ContentError
from npcs.campaign import load_campaign

from .foundation_support import CONFIG

LIST_PIPER = "(`glyphoxa voices --provider piper` lists them)"
LIST_ESPEAK = "(`glyphoxa voices --provider espeak` lists them)"

requires_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed"
)


def npc_with_voice(campaign: Path, voice: str) -> Path:
    path = campaign / "npcs" / "mira.yaml"
    path.write_text(f"name: Mira\npersonality: A nervous herbalist.\nvoice: {voice}\n")
    return path


def check_lines(
    campaign: Path, capsys: pytest.CaptureFixture[str], config: Path = CONFIG
) -> list[str]:
    code = main(["--config", str(config), "check", str(campaign)])
    out = capsys.readouterr().out
    assert code == 1, out
    return out.splitlines()


def openai_config(tmp_path: Path, **tts: str) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(
        yaml.safe_dump({"providers": {"tts": {"name": "openai", "api_key": "sk-x", **tts}}})
    )
    return path


def test_an_uninstalled_piper_voice_is_refused_with_the_way_to_get_it(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = npc_with_voice(campaign_copy, "{provider: piper, voice: en_GB-alan-medium}")
    assert check_lines(campaign_copy, capsys)[0] == (
        f"{mira}:3:33: voice.voice: no Piper voice named 'en_GB-alan-medium' is installed; did "
        f"you mean 'en_US-joe-medium'? {LIST_PIPER}; to add it: python -m "
        "piper.download_voices en_GB-alan-medium --data-dir voices, and list that folder in "
        "providers.tts.options.voice_dirs"
    )


def test_a_missing_piper_model_file_is_refused(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = npc_with_voice(campaign_copy, "{voice: voices/mira.onnx}")
    assert check_lines(campaign_copy, capsys)[0] == (
        f"{mira}:3:16: voice.voice: Piper model file voices/mira.onnx not found (relative "
        f"paths start at the folder glyphoxa runs in: {Path.cwd()})"
    )


@requires_espeak
@pytest.mark.parametrize(
    ("voice", "column", "message"),
    [
        (
            "en-us+m9",
            34,
            "espeak-ng has no variant 'm9' (it would speak the plain voice); did you mean "
            f"'en-us+m1'? {LIST_ESPEAK}",
        ),
        ("english", 34, f"espeak-ng has no language 'english' {LIST_ESPEAK}"),
        ("en-uk", 34, f"espeak-ng has no language 'en-uk'; did you mean 'en-us'? {LIST_ESPEAK}"),
    ],
)
def test_an_unknown_espeak_voice_is_refused(
    voice: str,
    column: int,
    message: str,
    campaign_copy: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mira = npc_with_voice(campaign_copy, f"{{provider: espeak, voice: {voice}}}")
    assert check_lines(campaign_copy, capsys)[0] == f"{mira}:3:{column}: voice.voice: {message}"


def test_an_openai_voice_needs_openai_speech(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mira = npc_with_voice(campaign_copy, "{provider: openai, voice: shimmer}")
    assert check_lines(campaign_copy, capsys)[0] == (
        f"{mira}:3:19: voice.provider: no OpenAI text-to-speech is configured "
        "(providers.tts.name is 'piper' in glyphoxa.yaml; set it to openai with an api_key or "
        "base_url, or give this NPC a piper or espeak voice)"
    )
    npc_with_voice(campaign_copy, "{provider: openai, voice: shimer}")
    config = openai_config(tmp_path)
    assert check_lines(campaign_copy, capsys, config)[0] == (
        f"{mira}:3:34: voice.voice: 'shimer' is not an OpenAI voice; did you mean 'shimmer'? "
        "(`glyphoxa voices --provider openai` lists them)"
    )
    # A server of your own knows its own voice names: they are not checked.
    custom = openai_config(tmp_path, base_url="http://127.0.0.1:9/v1")
    assert main(["--config", str(custom), "check", str(campaign_copy)]) == 0


def test_piper_voices_by_name_from_voice_dirs_speak(
    campaign_copy: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (joe,) = bundled_piper_models()
    voices = tmp_path / "voices"
    voices.mkdir()
    shutil.copyfile(joe, voices / "en_GB-test-medium.onnx")
    shutil.copyfile(f"{joe}.json", voices / "en_GB-test-medium.onnx.json")
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        yaml.safe_dump(
            {"providers": {"tts": {"name": "piper", "options": {"voice_dirs": str(voices)}}}}
        )
    )
    npc_with_voice(campaign_copy, "{voice: en_GB-test-medium}")
    assert main(["--config", str(config), "check", str(campaign_copy)]) == 0
    capsys.readouterr()
    assert main(["--config", str(config), "voices", "--provider", "piper", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["piper"]
    assert [(v["name"], v["default"]) for v in listing["voices"]] == [
        ("en_US-joe-medium", True),
        ("en_GB-test-medium", False),
    ]
    piper = PiperTts(voice_dirs=[voices])
    assert piper.voice_for(VoiceSettings(voice="en_GB-test-medium")) is not None
    assert piper.voice_for(VoiceSettings(voice="en_US-joe-medium")) is not None


@requires_espeak
def test_glyphoxa_voices_lists_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(CONFIG), "voices", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["piper"]["available"] and listing["espeak"]["available"]
    assert {"en-us", "en-us+m3"} <= {v["name"] for v in listing["espeak"]["voices"]}
    assert listing["openai"] == {
        "available": False,
        "problem": "no OpenAI text-to-speech is configured (providers.tts.name is 'piper' in "
        "glyphoxa.yaml; set it to openai with an api_key or base_url, or give this NPC a piper "
        "or espeak voice)",
        "voices": [],
        "npcs": [],  # no NPC of the example campaign speaks with an OpenAI voice
        "spoken_by": "not configured (providers.tts.name is not openai)",
    }
    assert main(["--config", str(CONFIG), "voices", "--provider", "espeak"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("espeak (") and "\n  en-us " in text and " m3 " in text


async def test_the_table_refuses_a_missing_voice_before_loading_models(
    campaign_copy: Path, tmp_path: Path
) -> None:
    mira = npc_with_voice(campaign_copy, "{voice: en_GB-alan-medium}")
    config = GlyphoxaConfig.model_validate({"campaign": {"path": str(campaign_copy)}})
    with pytest.raises(ContentError) as refused:
        async with open_table(
            config, memory_url=f"sqlite+aiosqlite:///{tmp_path / 'm.db'}", serve_metrics=False
        ):
            pytest.fail("the table opened with a voice that is not installed")
    assert str(refused.value).startswith(
        f"{mira}:3:16: voice.voice: no Piper voice named 'en_GB-alan-medium' is installed"
    )


@requires_espeak
async def test_hot_reload_keeps_the_npc_when_its_new_voice_is_missing(
    campaign_copy: Path, tmp_path: Path
) -> None:
    campaign = load_campaign(campaign_copy)
    memory = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
    session = build_session(
        config=GlyphoxaConfig.model_validate({"campaign": {"hot_reload": False}}),
        campaign=campaign,
        stt=OpenAiStt(base_url="http://127.0.0.1:9/v1", api_key="unused"),
        tts=VoiceRouter.from_config(None),
        engines=lambda npc: None,
        memory=memory,
        metrics=Metrics(),
    )
    await session.start()
    try:
        bartok = campaign.npcs["Bartok"]
        path = campaign_copy / "npcs" / "bartok.yaml"
        path.write_text(
            path.read_text().replace("provider: piper", "provider: espeak\n  voice: en-zz")
        )
        assert await session.controls.reload_npcs() == ["invalid Bartok"]
        assert campaign.npcs["Bartok"] is bartok
    finally:
        await session.stop()
        await memory.close()


@requires_espeak
async def test_a_voice_that_breaks_at_the_table_is_spoken_by_espeak_loudly(
    campaign_copy: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    router = VoiceRouter.from_config(None)
    session = build_session(
        config=GlyphoxaConfig(),
        campaign=load_campaign(campaign_copy),
        stt=OpenAiStt(base_url="http://127.0.0.1:9/v1", api_key="unused"),
        tts=router,
        engines=lambda npc: None,
        metrics=Metrics(),
    )
    gone = tmp_path / "gone.onnx"  # checked at start-up, deleted since
    with caplog.at_level(logging.ERROR, logger="bot.audio.speech.tts"):
        chunks = [
            c async for c in router.synthesize("Hello there.", VoiceSettings(voice=str(gone)))
        ]
    assert chunks and chunks[0].sample_rate == 22_050  # espeak-ng spoke
    assert f"piper voice '{gone}' failed" in caplog.text and "speaking with espeak" in caplog.text
    (alert,) = session.trouble.alerts
    assert alert.message.startswith(
        f"the piper voice {gone} failed (Piper voice '{gone}' not found"
    )
    assert alert.message.endswith("espeak-ng spoke instead")
