"""A real console for the tests: the bot's own server on a free port, the example campaign in
a temporary folder, the scripted LLM server, and Debian's chromium driven by Playwright.

One browser serves the whole session (each test opens its own context, with its own cookies).
Playwright never downloads a browser here: it launches /usr/bin/chromium. Screenshots go to
tests/artifacts/console/ (kept out of git).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from bot.bench.doubles.instant_llm import InstantLlm
from bot.frontends.console import ConsoleServer, console_for
from bot.settings.config import GlyphoxaConfig
from bot.settings.loader import load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"
CHROMIUM = Path(os.environ.get("GLYPHOXA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FOUND = CHROMIUM.exists()
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SECRET_KEY = "sk-console-test-secret-4242"


@dataclass
class ConsoleEnv:
    """A running console over a copy of the example campaign."""

    root: Path
    campaign: Path
    config_path: Path
    config: GlyphoxaConfig
    llm: InstantLlm
    server: ConsoleServer

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def hub(self) -> Any:
        return self.server.hub


def write_config(root: Path, campaign: Path, llm: InstantLlm, **console: Any) -> Path:
    path = root / "glyphoxa.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "providers": {
                    "llm": {
                        "name": "openai",
                        "base_url": llm.base_url,
                        "model": "scripted",
                        "api_key": SECRET_KEY,
                    },
                },
                "campaign": {"path": str(campaign), "hot_reload": True},
                "memory": {"url": f"sqlite+aiosqlite:///{root / 'out' / 'memory.db'}"},
                "tools": {
                    "sandbox_dir": str(root / "files"),
                    "calibration_path": str(root / "calibration.json"),
                },
                "console": {"port": 0, "link_file": str(root / "console.json"), **console},
            }
        )
    )
    return path


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def console_env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ConsoleEnv]:
    root = tmp_path_factory.mktemp("console")
    campaign = root / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    bartok = campaign / "npcs" / "bartok.yaml"
    text = bartok.read_text()  # the DM answers each of Bartok's dice rolls
    bartok.write_text(text.replace("llm:\n", "approval: {tools: {roll: always_ask}}\nllm:\n"))
    (root / "out").mkdir()
    async with InstantLlm() as llm:
        config_path = write_config(root, campaign, llm)
        config = load_config(config_path)
        server = console_for(
            config, config_path=config_path, memory_url=config.memory.url, campaign_dir=campaign
        )
        await server.start()
        try:
            yield ConsoleEnv(root, campaign, config_path, config, llm, server)
        finally:
            await server.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Any]:
    if not CHROMIUM_FOUND:
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:  # each launch: a fresh temporary profile
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


async def logged_in_page(
    browser: Any, env: ConsoleEnv | Any, *, width: int = 1440, height: int = 960, **options: Any
) -> Any:
    """A fresh browser context that opened a one-time login link; ``page.errors`` collects
    script errors and ``page.logged`` what the page wrote to the browser's console."""
    context = await browser.new_context(viewport={"width": width, "height": height}, **options)
    page = await context.new_page()
    errors: list[str] = []
    logged: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: logged.append(message.text))
    page.errors = errors
    page.logged = logged
    response = await page.goto(env.hub.login_url())
    assert response is not None and response.ok
    return page


async def wait_until_true(page: Any, expression: str, *, timeout_s: float = 20.0) -> None:
    """Poll ``expression`` from the test until it is true. Playwright's ``wait_for_function``
    evaluates the string inside the page once its first look was false, which the console's
    Content Security Policy (no 'unsafe-eval') refuses: on a busy machine that first look is
    false, and the test failed on the policy, not on the page."""
    deadline = time.monotonic() + timeout_s
    while not await page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout_s:g} s: {expression}")
        await asyncio.sleep(0.05)


async def screenshot(page: Any, name: str, *, full: bool = True) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=full)
    return path


@contextlib.asynccontextmanager
async def live_table(
    env: ConsoleEnv, label: str = "Test table", *, hub: Any = None, campaign: Path | None = None
) -> AsyncIterator[Any]:
    """A real table (``open_table``: the configured STT, TTS, tool host and memory, the
    scripted LLM) watched by the console (``hub``, else the session's) while the block runs;
    yields its feed (``feed.ended_event`` is set when the DM ends it in the console)."""
    from bot.table.assembly.table import open_table

    hub = hub if hub is not None else env.hub
    ended = asyncio.Event()

    async def end() -> None:
        ended.set()

    async with open_table(
        env.config, campaign=campaign or env.campaign, memory_url=env.config.memory.url,
        title=label, serve_metrics=False,
    ) as session:  # fmt: skip
        feed = hub.attach(session, label, on_end=end)
        feed.ended_event = ended
        try:
            yield feed
        finally:
            if feed.id in hub.tables:
                await hub.detach(feed)


def quick_client(env: ConsoleEnv) -> Any:
    """An HTTP client of the console that sends each request at once (TCP_NODELAY, as
    browsers do: without it a POST's body waits 40 ms for the headers' ACK)."""
    import socket

    import httpx

    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    transport = httpx.AsyncHTTPTransport(socket_options=options)
    return httpx.AsyncClient(base_url=env.url, timeout=60, transport=transport)
