"""The DM's console at a local-Discord table, in Debian's chromium.

The process is put together as ``glyphoxa run`` does it: the console started by ``run``'s own
``_start_console`` from a ``glyphoxa.yaml``, the production bot (``make_bot``) with the
configured table factory (``configured_tables``: ``open_table`` with the config's providers,
tool host and memory) and the console's hub. Discord is the local double speaking the real
protocols (gateway, REST, voice with DAVE); the LLM is the scripted server (it asks for a dice
roll whenever it may, and Bartok's rolls wait for the DM); speech recognition and synthesis
are the OpenAI audio API's local double (the recognizer returns the line the player speaks,
so no assertion rests on what a model hears).

The DM starts the session and asks for ``/console`` in Discord, logs in with the one-time link
and lands on the Discord table's live page. A player speaks to Bartok over Discord voice; the
roll waits for the DM both in a Discord direct message and in the console, where the DM,
on the Cast page, approves it: the Discord message then says it was answered in the console,
the roll runs, and the player's line and Bartok's answer reach the live transcript while
Bartok's voice goes out over Discord. The DM mutes Bartok in the console: Discord's
``/session status`` says so, and when the player speaks to him again nobody answers.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bot.bench.doubles.instant_audio import InstantAudio
from bot.bench.doubles.instant_llm import ANSWERS, InstantLlm
from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.tables.sim_world import LINE, player_line
from bot.frontends.commands.run import _start_console
from bot.frontends.discord_bot.sharding import make_bot
from bot.frontends.discord_bot.tables import configured_tables
from bot.settings.loader import load_config
from tests.console.conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CHROMIUM_FOUND,
    screenshot,
    wait_until_true,
)

from .conftest import OpenWorld
from .discord_api import APP_ID, FakeDiscordApi
from .guild_payloads import member

pytestmark = [pytest.mark.slow]

GUILD, TEXT, VOICE, DM_ROLE = 9400, 9401, 9402, 9403
DM_USER, PLAYER = 611, 612
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"
BARTOK_SAYS = ANSWERS["Bartok"]


def _interaction(n: int, name: str, sub: str | None = None) -> dict[str, Any]:
    """The DM's slash command ``/name [sub]`` in the table's text channel."""
    options = [{"name": sub, "type": 1, "options": []}] if sub else []
    return {
        "id": str(994000 + n), "application_id": str(APP_ID), "type": 2, "token": f"tok-{n}",
        "version": 1, "guild_id": str(GUILD), "channel_id": str(TEXT),
        "channel": {"id": str(TEXT), "type": 0, "name": "table", "guild_id": str(GUILD)},
        "member": {**member(DM_USER, "dm", [DM_ROLE]), "permissions": "0"},
        "app_permissions": "0", "attachment_size_limit": 10_485_760, "locale": "en-US",
        "guild_locale": "en-US", "entitlements": [], "authorizing_integration_owners": {},
        "context": 0, "data": {"id": "1", "name": name, "type": 1, "options": options},
    }  # fmt: skip


def _reply_to(n: int) -> Callable[[tuple[str, str, Any]], bool]:
    """The bot's answer to interaction ``n`` (its callback, or a follow-up on its token)."""

    def matches(call: tuple[str, str, Any]) -> bool:
        path = call[1]
        mine = path == f"interactions/{994000 + n}/tok-{n}/callback" or path.startswith(
            f"webhooks/{APP_ID}/tok-{n}"
        )
        return mine and bool(_content(call))  # not a bare "thinking..." deferral

    return matches


def _content(call: tuple[str, str, Any]) -> str:
    body = call[2] if isinstance(call[2], dict) else {}
    return str((body.get("data") or body).get("content") or "")


def _write_config(root: Path, llm: InstantLlm, audio: InstantAudio) -> Path:
    campaign = root / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    bartok = campaign / "npcs" / "bartok.yaml"  # the DM answers each of Bartok's dice rolls
    bartok.write_text(
        bartok.read_text().replace("llm:\n", "approval: {tools: {roll: always_ask}}\nllm:\n")
    )
    path = root / "glyphoxa.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "discord": {"guild_ids": [GUILD], "dm_role": "DM",
                            "transcription_notice": False, "transcript_channel_id": TEXT},
                "providers": {
                    "llm": {"name": "openai", "base_url": llm.base_url, "model": "scripted",
                            "api_key": "scripted"},
                    "stt": {"name": "openai", "base_url": audio.base_url, "model": "whisper-1"},
                    "tts": {"name": "openai", "base_url": audio.base_url, "model": "tts-1",
                            "options": {"all_voices": True}},
                },
                "campaign": {"path": str(campaign), "hot_reload": False},
                "memory": {"url": f"sqlite+aiosqlite:///{root / 'memory.db'}"},
                "tools": {"sandbox_dir": str(root / "files"),
                          "image_output_dir": str(root / "images"),
                          "calibration_path": str(root / "calibration.json")},
                "console": {"port": 0, "link_file": str(root / "console.json")},
            }
        )
    )  # fmt: skip
    return path


@pytest.fixture
async def world(local_world: OpenWorld) -> tuple[LocalDiscord, FakeDiscordApi]:
    players = {DM_USER: "dm", PLAYER: "Aria"}
    return await local_world(guild=GUILD, text=TEXT, voice=VOICE, dm_role=DM_ROLE, players=players)


@pytest.mark.skipif(not CHROMIUM_FOUND, reason=f"{CHROMIUM} is missing: apt-get install chromium")
async def test_the_dm_runs_a_discord_table_from_the_console(
    world: tuple[LocalDiscord, FakeDiscordApi], tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright

    local, api = world
    began = time.monotonic()
    speech, _voiced = await player_line()
    async with InstantLlm() as llm, InstantAudio(LINE) as audio, async_playwright() as playwright:
        config_path = _write_config(tmp_path, llm, audio)
        config = load_config(config_path)
        console = await _start_console(config, argparse.Namespace(config=str(config_path)))
        assert console is not None, "the console did not start"
        bot = make_bot(
            config, configured_tables(config), console=console.hub,
            connector=aiohttp.TCPConnector(ssl=False),  # the voice double's self-signed TLS
        )  # fmt: skip
        runner = asyncio.create_task(bot.start("test-token"), name="test:bot")
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            await asyncio.wait_for(bot.wait_until_ready(), timeout=30)
            await local.dispatch("INTERACTION_CREATE", _interaction(1, "session", "start"))
            started = await api.wait_for_call(_reply_to(1), timeout_s=60)
            assert "Session started" in _content(started)
            (feed,) = console.hub.tables.values()
            session = feed.session
            assert feed.label == "Table: Tavern"  # the guild's name and its voice channel's

            # The DM asks Discord for a login link and opens it: the live table's page.
            await local.dispatch("INTERACTION_CREATE", _interaction(2, "console"))
            offer = await api.wait_for_call(_reply_to(2))
            assert offer[2]["data"]["flags"] & 64  # only the DM sees it
            link = re.search(r"<(http://127\.0\.0\.1:\d+/login/[^>]+)>", _content(offer))
            assert link is not None, _content(offer)
            context = await browser.new_context(viewport={"width": 1440, "height": 960})
            live = await context.new_page()
            errors: list[str] = []
            live.on("pageerror", lambda error: errors.append(str(error)))
            response = await live.goto(link.group(1))
            assert response is not None and response.ok
            assert live.url.endswith(f"/tables/{feed.id}")
            assert await live.locator(".live-head h1").inner_text() == "Table: Tavern"
            await live.locator('.npc[data-npc="Bartok"]').wait_for()
            await wait_until_true(live, "window.glyphoxa.streams.table.up === true")
            # The DM is on another page (Cast) when the roll comes.
            cast = await context.new_page()
            cast.on("pageerror", lambda error: errors.append(str(error)))
            await cast.goto(console.url + "/cast")
            await wait_until_true(cast, "window.glyphoxa.streams.pulse.up === true")

            # The player speaks to Bartok over Discord voice; his roll waits for the DM.
            requests_before = len(llm.requests)
            await local.speak(PLAYER, speech)
            card = cast.locator("#dock .approval.waiting", has_text="roll")
            await card.wait_for(timeout=30_000)
            await cast.locator("#count-approvals", has_text="1").wait_for()
            asked = await api.wait_for_call(lambda c: "wants to use the tool `roll`" in str(c[2]))
            dm_channel = asked[1]  # the DM's private message carries the same question
            await screenshot(cast, "discord-approval-on-cast", full=False)
            await card.locator("button[value=approve]").click()
            await api.wait_for_call(
                lambda c: c[0] == "PATCH" and c[1].startswith(dm_channel)
                and "Approved** by DM in the console" in str(c[2]),
            )  # fmt: skip
            await cast.locator("#dock .approval", has_text="approved by DM").wait_for()

            # The roll ran; the player's line and Bartok's answer reach the live transcript,
            # and Bartok's voice goes out over Discord.
            sent = local.voice.stats.recent_from_bot
            heard = live.locator("#transcript .line.player", has_text="room for the night")
            await heard.wait_for(timeout=30_000)
            assert "Aria" in await heard.inner_text()
            answer = live.locator("#transcript .line.npc", has_text="dark ale is on tap")
            await answer.wait_for(timeout=30_000)
            assert "Bartok" in await answer.inner_text()
            turn = live.locator("#turns .turn").first
            await turn.wait_for(timeout=30_000)
            assert "roll(" in await turn.inner_text()
            tool_results = [
                m["content"] for r in llm.requests[requests_before:] for m in r["messages"]
                if m["role"] == "tool"
            ]  # fmt: skip
            assert any('"total"' in content for content in tool_results)  # the roll's result
            await _until(lambda: len(sent) >= 25, "Bartok's voice did not reach Discord")
            posted = await api.wait_for_call(
                lambda c: c[1] == f"channels/{TEXT}/messages" and "dark ale" in str(c[2])
            )  # Discord's own transcript channel agrees
            assert "Bartok" in posted[2]["content"]

            # The DM mutes Bartok in the console: the Discord table obeys.
            bartok = live.locator('.npc[data-npc="Bartok"]')
            await bartok.locator("form[action$='/control/mute'] button").click()
            await bartok.locator(".badge.muted-badge").wait_for(timeout=10_000)
            await local.dispatch("INTERACTION_CREATE", _interaction(3, "session", "status"))
            status = _content(await api.wait_for_call(_reply_to(3)))
            (line,) = [row for row in status.splitlines() if row.startswith("- Bartok:")]
            assert line.endswith("muted") or "muted," in line, status
            turns_before = len([t for t in session.traces if t.heard])
            await local.speak(PLAYER, speech)
            silent = live.locator("#transcript .line.routed", has_text="no NPC answers: muted")
            await silent.wait_for(timeout=30_000)
            await screenshot(live, "discord-live-table", full=False)
            # The table decided at that line: nobody answers, no turn is queued.
            assert len([t for t in session.traces if t.heard]) == turns_before
            assert session.controls.is_muted("Bartok")
            assert errors == []
            await context.close()

            await local.dispatch("INTERACTION_CREATE", _interaction(4, "session", "stop"))
            stopped = await api.wait_for_call(_reply_to(4), timeout_s=60)
            assert "Session stopped" in _content(stopped)
            assert not console.hub.tables  # the console stopped watching the ended table
        finally:
            await browser.close()
            await bot.close()
            await asyncio.wait_for(runner, timeout=30)
            await console.stop()
    print(f"the console at a Discord table: {time.monotonic() - began:.1f} s")


async def _until(condition: Callable[[], bool], why: str, timeout_s: float = 30.0) -> None:
    """Wait for state the bot exposes no event for (its playback runs on its own thread)."""
    try:
        async with asyncio.timeout(timeout_s):
            while not condition():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(why) from None
