"""``glyphoxa check`` judges the config like a campaign: a provider name that does not exist
is refused at its file:line:column with the choices and the fix, and the config file given is
the one checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.settings.loader import check_config

from .foundation_support import EXAMPLE


def config_file(tmp_path: Path, providers: str) -> Path:
    path = tmp_path / "table.yaml"
    path.write_text(f"campaign: {{path: {EXAMPLE}}}\nproviders:\n{providers}")
    return path


def problems(path: Path) -> list[str]:
    return [str(issue) for issue in check_config(path).issues]


def test_a_misspelt_provider_name_fails_check_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, "  llm:\n    name: olama\n  tts:\n    name: pipper\n")
    code = main(["check", "-c", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[:2] == [
        f"{path}:4:11: providers.llm.name: 'olama' is not an LLM provider; choose local or "
        "openai; Ollama speaks OpenAI's API: write name: openai and base_url: "
        "http://localhost:11434/v1 (or where yours listens)",
        f"{path}:6:11: providers.tts.name: 'pipper' is not a voice (tts) provider; choose "
        "piper, espeak or openai; did you mean 'piper'?",
    ]


@pytest.mark.parametrize(
    ("section", "name", "expected"),
    [
        ("stt", "whisper", "choose faster-whisper or openai; did you mean 'faster-whisper'?"),
        ("stt", "ollama", "choose faster-whisper or openai"),
        ("llm", "OpenAI", "choose local or openai; did you mean 'openai'?"),
        ("llm", "groq", "write name: openai and base_url: https://api.groq.com/openai/v1"),
        ("embeddings", "ollama", "base_url: http://localhost:11434/v1"),
        ("realtime", "azure", "'azure' is not a realtime provider; choose openai"),
        ("tts", "elevenlabs", "choose piper, espeak or openai"),
    ],
)
def test_every_service_knows_its_provider_names(
    tmp_path: Path, section: str, name: str, expected: str
) -> None:
    path = config_file(tmp_path, f"  {section}: {{name: {name}}}\n")
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:3:") and f"providers.{section}.name: '{name}'" in problem
    assert expected in problem


def test_the_spend_fallback_names_a_provider_that_exists(tmp_path: Path) -> None:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(
        "session:\n  spend:\n    hard: 1.0\n    on_hard: fallback\n"
        "    fallback: {name: lokal, model: smollm2}\n"
    )
    (problem,) = problems(path)
    assert "session.spend.fallback.name: 'lokal' is not an LLM provider" in problem
    assert problem.endswith("did you mean 'local'?")


def test_the_schema_offers_the_provider_names_to_editors() -> None:
    from bot.frontends.schemas import json_schema

    definitions = json_schema("config")["$defs"]
    assert definitions["LlmProvider"]["properties"]["name"]["enum"] == ["local", "openai"]
    assert definitions["TtsProvider"]["properties"]["name"]["enum"] == ["piper", "espeak", "openai"]


def test_check_given_a_config_file_checks_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, "  llm: {name: olama}\n")
    code = main(["check", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    assert (
        out.startswith(f"{path}:3:15: providers.llm.name: 'olama'")
        and "campaign folder not found" not in out
    )


def test_check_given_a_file_of_a_campaign_checks_that_campaign(
    tmp_path: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", str(campaign_copy / "npcs" / "bartok.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"({campaign_copy}): ok: 4 NPCs" in out


def test_two_configs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path, "  llm: {name: local}\n")
    other = tmp_path / "other.yaml"
    other.write_text("{}\n")
    code = main(["check", str(path), "-c", str(other)])
    assert code == 2
    assert "two config files given" in capsys.readouterr().err
