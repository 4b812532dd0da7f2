"""Typed tool settings end to end: a value written in glyphoxa.yaml reaches a running built-in
over real MCP stdio, text given across the process boundary (``--set``, ``GLYPHOXA_<KEY>``) is
read through the same model, and a bad value stops everything before any tool starts, naming
the file and line (or the option or variable)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaigns.basics import GlyphoxaError, Tier
from tools.builtin.standalone import build_context
from tools.config import BuiltinToolsConfig, McpConfig, McpServerConfig
from tools.host import ToolHost
from tools.settings import BuiltinSettings, override

from .conftest import REPO, FakeOpenAIImages, WebSite, result_text, stdio_session

KEY = "sk-from-the-environment-4711"


def _config(tmp_path: Path, tools: str) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(
        f"memory:\n  url: sqlite+aiosqlite:///{tmp_path / 'memory.db'}\n"
        f"tools:\n  calibration_path: {tmp_path / 'calibration.json'}\n{tools}",
        encoding="utf-8",
    )
    return path


async def test_glyphoxa_yaml_reaches_the_images_tool_over_stdio(
    images_api: FakeOpenAIImages, tmp_path: Path
) -> None:
    config = _config(
        tmp_path,
        f"  image_base_url: {images_api.url}/v1\n"
        "  image_api_key: ${IMAGE_KEY}\n"
        "  image_model: dall-e-3\n"
        "  image_size: 1792x1024\n"
        f"  image_output_dir: {tmp_path / 'pictures'}\n",
    )
    env = {**os.environ, "IMAGE_KEY": KEY}
    env.pop("OPENAI_API_KEY", None)
    serve = ("bot", "-c", str(config), "serve-tool", "images")
    async with stdio_session(*serve, env=env) as session:
        drawn = await session.call_tool("generate_image", {"prompt": "the harbour at dawn"})
        assert not drawn.is_error, result_text(drawn)
        saved = Path(json.loads(result_text(drawn))["path"])
    assert saved.parent == tmp_path / "pictures" and await asyncio.to_thread(saved.is_file)
    sent = images_api.requests[-1]
    assert sent["auth"] == f"Bearer {KEY}"
    assert sent["body"]["model"] == "dall-e-3" and sent["body"]["size"] == "1792x1024"
    assert sent["body"]["response_format"] == "b64_json"  # what a dall-e model is asked for

    # --set lays one value over the file, through the same model.
    async with stdio_session(*serve, "--set", "image_size=auto", env=env) as session:
        drawn = await session.call_tool("generate_image", {"prompt": "the harbour at dusk"})
        assert not drawn.is_error, result_text(drawn)
    assert images_api.requests[-1]["body"]["size"] == "auto"


async def test_a_host_reaches_the_web_tool_glyphoxa_yaml_configured(
    website: WebSite, tmp_path: Path
) -> None:
    """The tool host starts ``glyphoxa serve-tool web`` as an MCP stdio server: the search URL
    and the allowed host in glyphoxa.yaml decide where its calls go."""
    config = _config(
        tmp_path, f"  web_search_url: {website.url}\n  fetch_allow_hosts: ['127.0.0.1']\n"
    )
    served = McpServerConfig(
        name="remote_web",
        transport="stdio",
        command=[sys.executable, "-m", "bot", "-c", str(config), "serve-tool", "web"],
        cwd=str(REPO),
        connect_timeout_s=60,
    )
    host = ToolHost(McpConfig(servers=[served]), calibration_path=tmp_path / "c.json")
    async with host:
        found = await host.call(
            "web_search", {"query": "owlbear"}, whitelist=["*"], tier=Tier.DEEP, npc="sage"
        )
        assert found.status == "ok", found.content
        assert "https://example.org/owlbear" in found.content
        page = await host.call(
            "fetch_page",
            {"url": f"{website.url}/page"},
            whitelist=["*"],
            tier=Tier.DEEP,
            npc="sage",
        )
        assert page.status == "ok" and "fierce" in page.content, page.content
    assert website.searches[-1]["q"] == "owlbear" and "/page" in website.hits


async def test_environment_variables_reach_the_module_entry(
    images_api: FakeOpenAIImages, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "GLYPHOXA_IMAGE_BASE_URL": f"{images_api.url}/v1",
        "GLYPHOXA_IMAGE_API_KEY": KEY,
        "GLYPHOXA_IMAGE_MODEL": "gpt-image-1",
        "GLYPHOXA_IMAGE_OUTPUT_DIR": str(tmp_path / "out"),
    }
    async with stdio_session("tools.builtin", "images", "--set", "image_size=1024x1536",
                             env=env) as session:  # fmt: skip
        drawn = await session.call_tool("generate_image", {"prompt": "a lighthouse"})
        assert not drawn.is_error, result_text(drawn)
    sent = images_api.requests[-1]
    assert sent["auth"] == f"Bearer {KEY}" and sent["body"]["size"] == "1024x1536"
    assert "response_format" not in sent["body"]  # gpt-image models answer b64 by themselves
    assert len(list((tmp_path / "out").iterdir())) == 1  # GLYPHOXA_IMAGE_OUTPUT_DIR


def test_bad_values_in_glyphoxa_yaml_are_refused_with_file_and_line(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "  image_size: huge\n"
        "  web_search_url: ${SEARX_URL}\n"
        "  fetch_allow_hosts: [wiki.lan, 'wiki.lan:8080']\n",
    )
    command = [sys.executable, "-m", "bot", "-c", str(config), "serve-tool", "web"]
    # The server never starts: it exits with the problems on stderr before reading stdin.
    env = {**os.environ, "SEARX_URL": "searx.lan/?token=secret-4711"}
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=60,
                          stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "secret-4711" not in done.stderr
    lines = done.stderr.splitlines()
    for line_number, key, message in (
        (5, "tools.image_size", "not WIDTHxHEIGHT"),
        (6, "tools.web_search_url", "not an http(s) URL"),
        (7, "tools.fetch_allow_hosts[1]", "leave the port out"),
    ):
        assert any(
            f"glyphoxa.yaml:{line_number}:" in line and key in line and message in line
            for line in lines
        ), (key, done.stderr)


def test_bad_text_across_the_process_boundary_names_its_option_or_variable() -> None:
    with pytest.raises(GlyphoxaError, match=r"--set image_size: not WIDTHxHEIGHT"):
        build_context(None, None, ["image_size=huge"], environ={})
    with pytest.raises(GlyphoxaError, match=r"--set web_timeout_s: unknown tool setting"):
        build_context(None, None, ["web_timeout_s=9"], environ={})
    with pytest.raises(GlyphoxaError, match=r"GLYPHOXA_IMAGE_BASE_URL: not an http\(s\) URL"):
        build_context(None, None, [], environ={"GLYPHOXA_IMAGE_BASE_URL": "localhost:8080"})
    with pytest.raises(GlyphoxaError, match="--set expects KEY=VALUE"):
        build_context(None, None, ["image_size"], environ={})
    with pytest.raises(GlyphoxaError, match=r"fetch_allow_hosts \(item 2\): not a bare host"):
        override(BuiltinToolsConfig(), {"fetch_allow_hosts": "a.lan, wiki.lan/x"})


def test_module_entry_refuses_a_bad_value_before_serving() -> None:
    command = [sys.executable, "-m", "tools.builtin", "images", "--set", "image_size=12"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=60,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.strip() == "error: --set image_size: not WIDTHxHEIGHT (e.g. 1024x1024) or auto"
    )


def test_text_values_become_typed_settings() -> None:
    ctx = build_context(
        "camp",
        "notes",
        ["fetch_allow_hosts=Wiki.LAN, 10.0.0.7", "srd_path=", "memory_url=sqlite+aiosqlite://"],
        environ={"GLYPHOXA_SRD_PATH": "/srd", "GLYPHOXA_WEB_SEARCH_BACKEND": "brave"},
    )
    settings = ctx.settings
    assert settings.web.allow_hosts == ("wiki.lan", "10.0.0.7")
    assert settings.web.backend == "brave"
    assert settings.rules.srd_path is None  # an empty --set clears what the environment gave
    assert settings.memory_url == "sqlite+aiosqlite://"
    assert ctx.sandbox_dir == Path("notes") and ctx.campaign_dir == Path("camp")


def test_defaults_are_the_config_defaults_and_secrets_stay_hidden() -> None:
    defaults = BuiltinToolsConfig()
    settings = BuiltinSettings.from_config(defaults, environ={})
    assert str(settings.rules.db_path) == defaults.rules_db
    assert settings.images.model == defaults.image_model and settings.images.api_key is None
    assert str(settings.images.output_dir) == defaults.image_output_dir
    secret = BuiltinSettings.from_config(
        BuiltinToolsConfig.model_validate({"web_search_api_key": KEY}),
        memory_url="postgresql://glyphoxa:hunter2@db/glyphoxa",
        environ={"OPENAI_API_KEY": "sk-openai-secret"},
    )
    assert secret.images.api_key is not None
    assert secret.images.api_key.get_secret_value() == "sk-openai-secret"  # the fallback
    shown = repr(secret)
    assert KEY not in shown and "sk-openai-secret" not in shown and "hunter2" not in shown


def test_check_refuses_an_srd_path_the_rules_server_could_not_read(
    tmp_path: Path, campaign_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    (tmp_path / "srd").mkdir()  # a folder, but not the 5e-database files
    config = _config(tmp_path, f"  srd_path: {tmp_path / 'srd'}\n")
    config.write_text(f"campaign: {{path: {campaign_dir}}}\n" + config.read_text())
    assert main(["check", str(config)]) == 1
    out = capsys.readouterr().out
    assert f"{config}:6:" in out and "tools.srd_path:" in out
    assert "missing 5e-SRD-Conditions.json" in out
