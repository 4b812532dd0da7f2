"""glyphoxa.yaml loading: ${VAR} expansion, located errors, and secrets that never leak."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings.loader import (
    check_config,
    load_config,
    require_discord_token,
    resolve_config_path,
)
from campaigns.basics import GlyphoxaError
from campaigns.yamlio import ContentError

from .foundation_support import CONFIG, REPO

SECRET = "xoxo-very-secret-token-4711"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(text)
    return path


def test_shipped_config_loads_with_an_empty_environment() -> None:
    config = load_config(CONFIG, environ={})
    assert config.discord.token is None
    assert config.providers.llm.name == "local"
    assert config.providers.llm.model == "smollm2"
    assert {s.transport for s in config.mcp.servers} == {"stdio", "streamable-http"}
    auth_types = {s.auth.type for s in config.mcp.servers if s.auth is not None}
    assert auth_types == {"bearer", "oauth_client_credentials"}
    with pytest.raises(GlyphoxaError, match="DISCORD_TOKEN"):
        require_discord_token(config)


def test_token_comes_from_the_environment() -> None:
    config = load_config(CONFIG, environ={"DISCORD_TOKEN": SECRET})
    assert require_discord_token(config) == SECRET
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert SECRET not in config.model_dump_json()


def test_expansion_forms(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "discord:\n"
        "  dm_role: ${ROLE}\n"
        "  guild_ids: ['${GUILD}', 42]\n"
        "memory:\n"
        "  url: sqlite+aiosqlite:///${DATA_DIR:-/var/lib}/m.db\n"
        "logging:\n"
        "  file: ${LOG_FILE-fallback.log}\n"
        "providers:\n"
        "  llm:\n"
        "    name: openai\n"
        "    base_url: ${LLM_URL:-}\n"
        "    model: $${not-a-var}\n",
    )
    env = {"ROLE": "Game Master", "GUILD": "123", "DATA_DIR": "", "LOG_FILE": ""}
    config = load_config(path, environ=env)
    assert config.discord.dm_role == "Game Master"
    assert config.discord.guild_ids == [123, 42]
    assert config.memory.url == "sqlite+aiosqlite:////var/lib/m.db"
    assert config.logging.file is None  # ${VAR-default} keeps a set-but-empty value: empty
    assert config.providers.llm.base_url is None
    assert config.providers.llm.model == "${not-a-var}"


def test_every_missing_variable_is_reported_with_its_key(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "discord:\n  token: ${NOPE_TOKEN}\n  dm_role: ${NOPE_ROLE}\nmetrics:\n  port: 99999\n",
    )
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={})
    text = str(raised.value)
    assert f"{path}:2:10: discord.token: environment variable NOPE_TOKEN is not set" in text
    assert f"{path}:3:12: discord.dm_role: environment variable NOPE_ROLE is not set" in text
    assert f"{path}:5:9: metrics.port:" in text


def test_unquoted_reference_in_flow_list_gets_a_hint(tmp_path: Path) -> None:
    loaded = check_config(_write(tmp_path, "discord:\n  guild_ids: [${GUILD}]\n"), environ={})
    assert [i.line for i in loaded.issues] == [2]
    assert "quote" in loaded.issues[0].message


def test_malformed_reference(tmp_path: Path) -> None:
    path = _write(tmp_path, "discord:\n  dm_role: ${1BAD}\n")
    loaded = check_config(path, environ={})
    assert [i.line for i in loaded.issues] == [2]
    assert "malformed variable reference" in loaded.issues[0].message


def test_secrets_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        "discord:\n"
        "  token: ${TOKEN}\n"
        "  guild_ids: ['${TOKEN}']\n"  # a secret landing in the wrong field must not be echoed
        "providers:\n"
        "  llm: {name: openai, api_key: '${TOKEN}', options: {key: ['${TOKEN}']}}\n"
        "tools:\n"
        "  web_search_api_key: {nested: '${TOKEN}'}\n",
    )
    loaded = check_config(path, environ={"TOKEN": SECRET})
    assert len(loaded.issues) == 3
    text = "\n".join(str(issue) for issue in loaded.issues)
    assert SECRET not in text
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={"TOKEN": SECRET})
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)


def test_secrets_not_printed_by_the_cli(tmp_path: Path, campaign_copy: Path) -> None:
    path = _write(
        tmp_path, "discord:\n  token: ${DISCORD_TOKEN}\n  guild_ids:\n    - ${DISCORD_TOKEN}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "bot", "--config", str(path), "check", str(campaign_copy)],
        capture_output=True,
        text=True,
        env={"DISCORD_TOKEN": SECRET, "PATH": "/usr/bin:/bin"},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "discord.guild_ids[0]" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_config_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GLYPHOXA_CONFIG", raising=False)
    assert resolve_config_path(None) is None
    assert load_config().campaign.path == "campaigns/example"  # defaults without a file
    (tmp_path / "glyphoxa.yaml").write_text("campaign:\n  path: here\n")
    assert load_config().campaign.path == "here"
    other = tmp_path / "other.yaml"
    other.write_text("campaign:\n  path: there\n")
    monkeypatch.setenv("GLYPHOXA_CONFIG", str(other))
    assert load_config().campaign.path == "there"
    monkeypatch.setenv("GLYPHOXA_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(GlyphoxaError, match="config file not found"):
        load_config()
    assert main(["check"]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_empty_config_file_means_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, "# nothing configured yet\n")
    assert load_config(path, environ={}).memory.url.startswith("sqlite+aiosqlite")


def test_the_shipped_dm_rule_lets_the_server_owner_in() -> None:
    settings = load_config(CONFIG, environ={}).discord
    assert (settings.dm_role, settings.dm_admins) == ("Dungeon Master", True)


def test_a_config_where_nobody_is_dm_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "discord:\n  dm_role: ''\n  dm_admins: false\n")
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={})
    assert (
        f"{path}:3:14: discord.dm_admins: false while dm_role is empty, so nobody could steer "
        "the table: set dm_role to your DM role's name, or dm_admins: true"
    ) in str(raised.value)
    config = load_config(_write(tmp_path, "discord:\n  dm_role: DM\n  dm_admins: false\n"))
    assert (config.discord.dm_role, config.discord.dm_admins) == ("DM", False)


def test_a_misspelt_provider_option_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "providers:\n"
        "  llm:\n"
        "    name: local\n"
        "    options:\n"
        "      n_ctxx: 4096\n"
        "  stt:\n"
        "    name: faster-whisper\n"
        "    options: {cpu_threads: lots}\n",
    )
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={})
    text = str(raised.value)
    assert f"{path}:5:7: providers.llm.options: unknown key 'n_ctxx'; did you mean 'n_ctx'?" in text
    assert f"{path}:8:28: providers.stt.options.cpu_threads:" in text


def test_an_option_its_provider_would_ignore_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "providers:\n  stt:\n    name: openai\n    options:\n      beam_size: 5\n"
    )
    with pytest.raises(ContentError, match="beam_size is for faster-whisper"):
        load_config(path, environ={})
    path = _write(tmp_path, "providers:\n  llm:\n    name: openai\n    options: {n_ctx: 4096}\n")
    with pytest.raises(ContentError, match="n_ctx is for the bundled server"):
        load_config(path, environ={})


def test_provider_options_are_typed_with_their_defaults(tmp_path: Path) -> None:
    config = load_config(
        _write(tmp_path, "providers:\n  llm:\n    name: local\n    options: {n_ctx: '4096'}\n"),
        environ={},
    )
    options = config.providers.llm.options
    assert (options.n_ctx, options.n_threads, options.speculate, options.prefill) == (
        4096,
        1,
        True,
        None,
    )
    assert config.providers.stt.options.window_s == 10.0


def test_realtime_session_renewal_is_typed_and_its_margin_must_fit_the_limit(
    tmp_path: Path,
) -> None:
    realtime = "providers:\n  realtime:\n    name: openai\n    base_url: http://x/v1\n"
    config = load_config(_write(tmp_path, realtime), environ={})
    assert config.providers.realtime is not None
    options = config.providers.realtime.options
    assert (options.session_limit_s, options.renew_margin_s, options.carry_turns) == (
        1800.0,
        120.0,
        8,
    )
    path = _write(
        tmp_path, realtime + "    options:\n      session_limit_s: 600\n      renew_margin_s: 600\n"
    )
    with pytest.raises(ContentError) as raised:
        load_config(path, environ={})
    assert f"{path}:6:7: providers.realtime.options: renew_margin_s (600) must be smaller" in str(
        raised.value
    )
    path = _write(tmp_path, realtime + "    options: {carry_turns: -1}\n")
    with pytest.raises(ContentError, match=r"providers\.realtime\.options\.carry_turns"):
        load_config(path, environ={})
