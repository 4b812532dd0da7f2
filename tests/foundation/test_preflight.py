"""Every mistake caught before the table starts: ``glyphoxa run`` and ``rehearse`` check the
campaign and reach every configured model service first, and stop with the doctor line (or go
on with ``--anyway``); the YAML warnings ``check`` prints show wherever the campaign loads."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from bot.cli import main
from bot.frontends.doctor.preflight import preflight
from bot.settings.config import GlyphoxaConfig

from .foundation_support import EXAMPLE

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhXyZa." + "s" * 38  # well-shaped, never sent anywhere
SPLIT = "secret_knowledge: [Her husband, Lord Aldric, pushed her]\n"


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def write_config(tmp_path: Path, campaign: Path = EXAMPLE, **providers: object) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump({
        "discord": {"token": TOKEN},
        "providers": providers,
        "campaign": {"path": str(campaign), "hot_reload": False},
        "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"},
        "tools": {"sandbox_dir": str(tmp_path / "files"),
                  "calibration_path": str(tmp_path / "calibration.json")},
    }))  # fmt: skip
    return path


def with_mira(campaign: Path, extra: str) -> Path:
    mira = campaign / "npcs" / "mira.yaml"
    mira.write_text("name: Mira\npersonality: A nervous herbalist.\n" + extra)
    return mira


@pytest.fixture
async def answering_server() -> AsyncIterator[dict[str, str]]:
    """An OpenAI-compatible server's front door: ``/ok/v1`` lists models, ``/locked/v1``
    refuses every key (401), ``/broken/v1`` answers 503, ``/bare/v1`` has no model list (404)."""
    app = web.Application()

    async def models(request: web.Request) -> web.Response:
        door = request.match_info["door"]
        if door == "locked":
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        if door == "broken":
            return web.json_response({"error": {"message": "overloaded"}}, status=503)
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    app.router.add_get("/{door:ok|locked|broken}/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield {
        door: f"http://127.0.0.1:{port}/{door}/v1" for door in ("ok", "locked", "broken", "bare")
    }
    await runner.cleanup()


async def test_each_model_service_is_reached_and_a_failure_names_url_key_and_fix(
    answering_server: dict[str, str],
) -> None:
    config = GlyphoxaConfig.model_validate({
        "campaign": {"path": str(EXAMPLE)},
        "providers": {
            "llm": {"name": "openai", "base_url": answering_server["ok"], "model": "m"},
            "stt": {"name": "openai", "base_url": answering_server["locked"], "api_key": "bad"},
            "tts": {"name": "openai", "base_url": answering_server["bare"]},
            "embeddings": {"name": "openai", "base_url": answering_server["broken"]},
            "realtime": {"name": "openai", "base_url": closed_url(), "api_key": "k"},
        },
    })  # fmt: skip
    found = await preflight(config, config_path=None, campaign_dir=None)
    by_name = {outcome.name: outcome for outcome in found.outcomes}
    assert found.reached == ["llm", "tts"]  # a server with no model list is there all the same
    assert by_name["stt"].detail == (
        f"speech recognition server at {answering_server['locked']} refused the key (401)"
    )
    assert by_name["stt"].fix == "check providers.stt.api_key"
    assert by_name["embeddings"].detail.endswith("answered 503")
    realtime = by_name["realtime"]
    assert realtime.status == "FAIL" and realtime.detail.startswith("realtime server unreachable")
    assert realtime.fix == "check providers.realtime.base_url and that the server runs"
    assert by_name["spend-fallback"].status == "SKIP"
    assert found.seconds < 10


def test_run_refuses_a_campaign_that_fails_check_before_discord(
    tmp_path: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = with_mira(campaign_copy, "tools: [rol]\n")
    code = main(["-c", str(write_config(tmp_path, campaign_copy)), "run"])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err == [
        f"{mira}:3:9: tools[0]: unknown tool 'rol'; did you mean 'roll'?",
        "run: stopped: the campaign has 1 problem (above; glyphoxa check lists them too)",
    ]


def test_run_stops_at_an_unreachable_model_with_the_doctor_line_and_the_warnings(
    tmp_path: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = with_mira(campaign_copy, SPLIT)
    url = closed_url()
    llm = {"name": "openai", "base_url": url, "model": "m"}
    code = main(["-c", str(write_config(tmp_path, campaign_copy, llm=llm)), "run"])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err[0].startswith(f"{mira}:3:19: warning: secret_knowledge: the commas split this")
    assert err[1] == (
        "run: the warnings above do not stop it (glyphoxa check --strict fails on them)"
    )
    assert re.fullmatch(
        rf"FAIL  llm +\d+\.\d\d s  LLM server unreachable at {re.escape(url)} -> fix: check "
        r"providers\.llm\.base_url and that the server runs",
        err[2],
    )
    assert err[3].startswith("run: stopped before starting: llm cannot be reached")
    assert "--anyway" in err[3]


def test_doctor_shows_the_campaigns_warnings(
    tmp_path: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = with_mira(campaign_copy, SPLIT)
    config = str(write_config(tmp_path, campaign_copy))
    assert main(["-c", config, "doctor", "--only", "campaign"]) == 0
    out, err = capsys.readouterr()
    assert "5 NPCs (Bartok, Captain Vessa, Greymantle, Mira, Whisper); 1 warning (on stderr)" in out
    assert err.startswith(f"{mira}:3:19: warning: secret_knowledge: the commas split this")
    assert main(["-c", config, "doctor", "--only", "campaign", "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)["checks"]
    (warning,) = checks[1]["warnings"]
    assert warning.startswith(f"{mira}:3:19: warning:")


@pytest.mark.parametrize(
    "command", [["npc", "show", "Mira"], ["npc", "list"], ["address", "Mira, any news?"]]
)
def test_commands_that_load_the_campaign_show_its_warnings(
    tmp_path: Path,
    campaign_copy: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    mira = with_mira(campaign_copy, SPLIT)
    assert main(["-c", str(write_config(tmp_path, campaign_copy)), *command]) == 0
    err = capsys.readouterr().err
    expected = f"{mira}:3:19: warning: secret_knowledge: the commas split this into 3 items"
    assert err.startswith(expected), err


def test_npc_show_json_carries_the_npcs_own_warnings(
    tmp_path: Path, campaign_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mira = with_mira(campaign_copy, SPLIT)
    config = str(write_config(tmp_path, campaign_copy))
    assert main(["-c", config, "npc", "show", "Mira", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["warnings"][0].startswith(f"{mira}:3:19: warning: secret_knowledge:")
    assert main(["-c", config, "npc", "show", "Bartok", "--json"]) == 0
    assert not any("commas" in w for w in json.loads(capsys.readouterr().out)["warnings"])
