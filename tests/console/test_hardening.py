"""The console under attack, over HTTP against the real server: sessions that end at once,
changes from other sites refused, slow requests cut off, the client's address its own, no
secret on any page or in the log, an editor save that keeps the whole campaign valid, and 500
pages that still carry the security headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from bot.frontends.console import ConsoleServer, console_for
from bot.frontends.console.shield import Shield
from bot.settings.config import LoggingConfig
from bot.settings.loader import load_config
from bot.telemetry.logging_setup import configure_logging, reset_logging

from .conftest import ConsoleEnv, live_table, quick_client

pytestmark = pytest.mark.asyncio(loop_scope="session")

PASSWORD = "pg-pass-7f3a9c"
TOKENS = {
    "PGPASS": PASSWORD,
    "NOTES_TOKEN": "notes-env-token-5521",
    "NOTES_KEY": "notes-cli-key-8812",
    "MCP_BEARER": "bearer-secret-0042",
    "WEB_URL": "https://search.example/?apikey=query-secret-6631",
}
LITERAL = "literal-env-secret-9090"


async def _login(env: ConsoleEnv | Any, client: httpx.AsyncClient) -> str:
    """Log ``client`` in as the DM; its CSRF token."""
    page = await client.get(env.hub.login_url().removeprefix(env.url), follow_redirects=True)
    assert page.status_code == 200, page.text
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)
    assert token is not None
    return token.group(1)


async def test_logout_ends_a_copied_cookie_at_once(console_env: ConsoleEnv) -> None:
    async with quick_client(console_env) as browser, quick_client(console_env) as thief:
        csrf = await _login(console_env, browser)
        thief.cookies.update(browser.cookies)  # copied before logout
        assert (await thief.get("/cast")).status_code == 200
        out = await browser.post("/logout", data={"csrf": csrf})
        assert out.status_code == 303
        assert "max-age=0" in out.headers["set-cookie"].lower()
        assert (await thief.get("/cast")).status_code == 401
        refused = await thief.post("/share", data={"action": "create", "csrf": csrf})
        assert refused.status_code in (401, 403)


async def test_log_out_everywhere_ends_every_dm_browser_and_its_live_page(
    console_env: ConsoleEnv,
) -> None:
    env = console_env
    async with (
        live_table(env) as feed,
        quick_client(env) as laptop,
        quick_client(env) as tablet,
    ):
        csrf = await _login(env, laptop)
        await _login(env, tablet)
        async with tablet.stream("GET", f"/tables/{feed.id}/events") as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            assert (await anext(lines)).startswith("retry:")
            done = await laptop.post("/logout", data={"csrf": csrf, "everywhere": "1"})
            assert done.status_code == 303

            async def drain() -> None:
                async for _line in lines:
                    pass

            await asyncio.wait_for(drain(), 5)  # the tablet's live page closed at once
        assert (await tablet.get("/cast")).status_code == 401
        assert (await laptop.get("/cast")).status_code == 401


async def test_changes_from_another_site_are_refused(console_env: ConsoleEnv) -> None:
    async with quick_client(console_env) as client:
        csrf = await _login(console_env, client)
        change = {"action": "create", "csrf": csrf}
        for headers in (
            {"origin": "http://evil.example"},
            {"origin": "http://127.0.0.1:1"},  # another port on this machine: another origin
            {"origin": "null"},
            {"sec-fetch-site": "cross-site"},
            {"sec-fetch-site": "same-site"},
        ):
            refused = await client.post("/share", data=change, headers=headers)
            assert refused.status_code == 403, headers
            assert "another" in refused.text
        own = {"origin": console_env.url, "sec-fetch-site": "same-origin"}
        assert (await client.post("/share", data=change, headers=own)).status_code == 200


@pytest_asyncio.fixture(loop_scope="session")
async def quick_console(console_env: ConsoleEnv) -> AsyncIterator[ConsoleServer]:
    """A second console over the same campaign whose requests must arrive within 1.5 s."""
    config = console_env.config.model_copy(deep=True)
    config.console.read_timeout_s = 1.5
    config.console.link_file = str(console_env.root / "quick-console.json")
    server = console_for(config, config_path=None, campaign_dir=console_env.campaign)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_unfinished_requests_do_not_hold_connections(quick_console: ConsoleServer) -> None:
    host, port = quick_console.url.removeprefix("http://").split(":")
    slow: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for n in range(300):
        reader, writer = await asyncio.open_connection(host, int(port))
        if n % 3 == 2:  # a body that never comes
            writer.write(b"POST /share HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 90\r\n\r\nx")
        else:  # headers that never end
            writer.write(b"GET /cast HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
        slow.append((reader, writer))
    await asyncio.gather(*(writer.drain() for _reader, writer in slow))
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=quick_console.url) as client:  # others still served
        assert (await client.get("/")).status_code == 401

    async def closed(reader: asyncio.StreamReader) -> bool:
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):
                pass
        return True

    results = await asyncio.wait_for(
        asyncio.gather(*(closed(reader) for reader, _writer in slow)), 20
    )
    took = time.monotonic() - started
    for _reader, writer in slow:
        writer.close()
    print(f"300 unfinished requests closed by the console within {took:.1f} s")
    assert all(results) and took >= 1.0


async def test_the_client_address_is_the_sockets_own(
    console_env: ConsoleEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.frontends.console")
    async with quick_client(console_env) as client:
        client.headers["x-forwarded-for"] = "203.0.113.7"
        client.headers["forwarded"] = "for=203.0.113.7"
        await _login(console_env, client)
    logged = [r.getMessage() for r in caplog.records if "logged in from" in r.getMessage()]
    assert logged and logged[-1].endswith("from 127.0.0.1"), logged


def _secret_config(root: Path, campaign: Path) -> Path:
    path = root / "secret-glyphoxa.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "campaign": {"path": str(campaign)},
                "memory": {"url": "postgresql+asyncpg://glyphoxa:${PGPASS}@db.example/glyphoxa"},
                "tools": {"web_search_url": "${WEB_URL}"},
                "mcp": {
                    "servers": [
                        {
                            "name": "notes",
                            "transport": "stdio",
                            "command": ["notes-server", "--api-key", "${NOTES_KEY}"],
                            "env": {"NOTES_TOKEN": "${NOTES_TOKEN}", "PLAIN": LITERAL},
                        },
                        {
                            "name": "web",
                            "transport": "streamable-http",
                            "url": "https://mcp.example/mcp?token=url-token-3141&page=2",
                            "auth": {"type": "bearer", "token": "${MCP_BEARER}"},
                        },
                    ]
                },
                "console": {"port": 0, "link_file": str(root / "secret-console.json")},
            }
        )
    )
    return path


async def test_no_secret_on_the_settings_page_or_in_the_log(
    console_env: ConsoleEnv, tmp_path: Path
) -> None:
    path = _secret_config(tmp_path, console_env.campaign)
    config = load_config(path, environ=TOKENS)
    every = [*TOKENS.values(), "query-secret-6631", "url-token-3141", LITERAL]
    server = console_for(config, config_path=path, campaign_dir=console_env.campaign)
    await server.start()
    try:
        async with quick_client(server) as client:  # type: ignore[arg-type]
            await _login(server, client)
            page = (await client.get("/settings")).text
    finally:
        await server.stop()
    for secret in every:
        assert secret not in page, secret
    assert "postgresql+asyncpg://glyphoxa:${PGPASS}@db.example/glyphoxa" in page
    assert "${NOTES_TOKEN}" in page and "${MCP_BEARER}" in page  # where each comes from

    log_file = tmp_path / "glyphoxa.log"
    configure_logging(LoggingConfig(file=str(log_file)))
    try:
        logger = logging.getLogger("bot.frontends.console.test")
        logger.warning("connecting to %s with %s", config.memory.url, config.mcp.servers[0].env)
        try:
            raise ConnectionError(f"refused: {config.tools.web_search_url} {TOKENS['NOTES_KEY']}")
        except ConnectionError:
            logger.exception("the notes server failed")
    finally:
        reset_logging()
    written = log_file.read_text()
    assert "connecting to postgresql+asyncpg://glyphoxa:" in written
    assert "ConnectionError" in written
    for secret in every:
        assert secret not in written, secret


async def test_save_refuses_a_name_another_npc_has_lookalikes_included(
    console_env: ConsoleEnv,
) -> None:
    env = console_env
    greymantle = yaml.safe_load((env.campaign / "npcs" / "greymantle.yaml").read_text())
    async with quick_client(env) as client:
        csrf = await _login(env, client)
        # aaa.yaml sorts first, so check reports the clash in bartok.yaml, not in the draft
        clashes = (("Ｂａｒｔｏｋ", []), ("Aldric", ["ｇｒｅｙ"]), ("Aldric", ["Bartok"]))
        for name, aliases in clashes:
            draft = {**greymantle, "name": name, "aliases": aliases}
            text = yaml.safe_dump(draft, allow_unicode=True, sort_keys=False)
            for action in ("check", "save"):
                response = await client.post(
                    f"/npcs/aaa.yaml/{action}", data={"text": text, "csrf": csrf}
                )
                assert "another file fails because of this draft" in response.text, name
            assert response.status_code == 422 and "not saved" in response.text
            assert not (env.campaign / "npcs" / "aaa.yaml").exists()
        fine = {**greymantle, "name": "Aldric", "aliases": ["the smith"]}
        text = yaml.safe_dump(fine, allow_unicode=True, sort_keys=False)
        saved = await client.post("/npcs/aaa.yaml/save", data={"text": text, "csrf": csrf})
        assert saved.status_code == 200 and "Saved aaa.yaml" in saved.text
    (env.campaign / "npcs" / "aaa.yaml").unlink()


async def test_a_symlink_loop_in_npcs_breaks_no_page(console_env: ConsoleEnv) -> None:
    loop = console_env.campaign / "npcs" / "circle.yaml"
    loop.symlink_to(loop)
    try:
        async with quick_client(console_env) as client:
            await _login(console_env, client)
            for path in ("/cast", "/npcs/bartok.yaml/edit", "/npcs/bartok.yaml/sees", "/world"):
                assert (await client.get(path)).status_code == 200, path
            assert (await client.get("/npcs/circle.yaml/edit")).status_code == 400
            assert (await client.get("/npcs/circle.yaml/voice.wav")).status_code in (400, 404)
    finally:
        loop.unlink()


async def test_a_500_page_carries_the_security_headers(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a bug")

    shield = Shield(broken, error_page=lambda status, detail: f"<p>{status} {detail}</p>".encode())
    transport = httpx.ASGITransport(app=shield)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/anything")
    assert response.status_code == 500
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None  # one line, no traceback
    assert "RuntimeError: a bug" in errors[0].getMessage()


async def test_the_console_socket_sends_at_once() -> None:
    """Responses leave at once (TCP_NODELAY): without it each waited 40 ms for an ACK."""
    from bot.frontends.console.server import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
