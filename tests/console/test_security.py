"""Who may do what, and bad input, against the real console server over HTTP.

No session: 401 and the page that says how to log in. A change without the CSRF token: 403.
A read-only viewer: the live table only. An NPC edit with a path, an oversized body or invalid
YAML: refused with ``glyphoxa check``'s own message, the file on disk unchanged. No secret
reaches any page. Login links work once, and a tampered or expired one never.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time

import httpx
import pytest

from bot.frontends.checking import run_check
from bot.frontends.console.links import LinkKey, mint_token

from .conftest import SECRET_KEY, ConsoleEnv

pytestmark = pytest.mark.asyncio(loop_scope="session")

NPC = "/npcs/bartok.yaml"
PAGES = ["/", "/cast", "/world", "/sessions", "/review", "/settings", "/share",
         f"{NPC}/edit", f"{NPC}/sees", f"{NPC}/voice.wav"]  # fmt: skip


async def _dm(env: ConsoleEnv) -> tuple[httpx.AsyncClient, str]:
    """A client logged in as the DM, and its CSRF token (from the page, as htmx reads it)."""
    client = httpx.AsyncClient(base_url=env.url, timeout=30)
    response = await client.get(env.hub.login_url().removeprefix(env.url), follow_redirects=True)
    assert response.status_code == 200, response.text
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', response.text)
    assert token is not None
    return client, token.group(1)


async def test_no_session_gets_401_and_the_login_help(console_env: ConsoleEnv) -> None:
    async with httpx.AsyncClient(base_url=console_env.url) as client:
        for path in PAGES:
            response = await client.get(path)
            assert response.status_code == 401, path
        assert "glyphoxa console link" in response.text
        assert "/console" in response.text
        post = await client.post("/npcs/bartok.yaml/save", data={"text": "x"})
        assert post.status_code == 401


async def test_login_link_works_once_and_never_tampered_or_expired(
    console_env: ConsoleEnv,
) -> None:
    link = console_env.hub.login_url().removeprefix(console_env.url)
    async with httpx.AsyncClient(base_url=console_env.url) as client:
        first = await client.get(link)
        assert first.status_code == 303
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
    async with httpx.AsyncClient(base_url=console_env.url) as client:
        assert (await client.get(link)).status_code == 401  # used up
        expiry, nonce, signature = link.removeprefix("/login/").split(".")
        forged = f"/login/{int(expiry) + 3600}.{nonce}x.{signature}"
        assert (await client.get(forged)).status_code == 401
        old = mint_token(console_env.hub.links.key, 1, now=time.time() - 3600)
        assert (await client.get(f"/login/{old}")).status_code == 401
        other = LinkKey().mint(10)  # another process's key (a restart)
        assert (await client.get(f"/login/{other}")).status_code == 401


async def test_changes_without_csrf_token_are_refused(console_env: ConsoleEnv) -> None:
    client, csrf = await _dm(console_env)
    async with contextlib.aclosing(client):
        path = "/npcs/bartok.yaml/check"
        assert (await client.post(path, data={"text": "name: X"})).status_code == 403
        wrong = {"X-CSRF-Token": "not-the-token"}
        assert (await client.post(path, data={"text": "name: X"}, headers=wrong)).status_code == 403
        for change in ("/tables/1/control/mute", "/tables/1/control/mood", "/review/1",
                       "/share", "/logout"):  # fmt: skip
            assert (await client.post(change, data={"npc": "Bartok"})).status_code == 403, change
        ok = await client.post(path, data={"text": "name: X", "csrf": csrf})
        assert ok.status_code == 200


async def test_npc_edits_with_a_path_too_big_or_invalid_are_refused_unchanged(
    console_env: ConsoleEnv,
) -> None:
    bartok = console_env.campaign / "npcs" / "bartok.yaml"
    before = bartok.read_bytes()
    client, csrf = await _dm(console_env)
    headers = {"X-CSRF-Token": csrf}
    async with contextlib.aclosing(client):
        for name in ("..%2Fcampaign.yaml", "..%2F..%2Fglyphoxa.yaml", "%2Fetc%2Fpasswd",
                     "bartok.txt", ".hidden.yaml"):  # fmt: skip
            response = await client.post(
                f"/npcs/{name}/save", data={"text": "name: X\npersonality: y\n"}, headers=headers
            )
            assert response.status_code in (400, 404), name
            if response.status_code == 400:
                assert "not an NPC file of this campaign" in response.text
        huge = "name: Bartok\npersonality: >-\n" + "  x\n" * 70_000
        response = await client.post("/npcs/bartok.yaml/save", data={"text": huge}, headers=headers)
        assert response.status_code in (413, 422)
        assert "an NPC file is at most 256 KB" in response.text
        broken = before.decode().replace("budget_tier: fast", "budget_tier: [fast")
        response = await client.post(
            "/npcs/bartok.yaml/save", data={"text": broken}, headers=headers
        )
        assert response.status_code == 422
    assert bartok.read_bytes() == before
    # The message is check's own, for the same text on disk.
    shadow = console_env.root / "shadow"
    if not shadow.exists():
        import shutil

        shutil.copytree(console_env.campaign, shadow)
    (shadow / "npcs" / "bartok.yaml").write_text(broken)
    report = run_check(shadow, config_path=console_env.config_path)
    expected = next(i for i in report.issues if i.file.endswith("bartok.yaml"))
    message = str(expected).replace(str(shadow), str(console_env.campaign.resolve()))
    assert _unescape(message) in _unescape(response.text)


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


async def test_no_secret_reaches_a_page(console_env: ConsoleEnv) -> None:
    client, _csrf = await _dm(console_env)
    async with contextlib.aclosing(client):
        for path in PAGES[:-1]:
            response = await client.get(path)
            assert response.status_code == 200, path
            assert SECRET_KEY not in response.text, path
            assert console_env.hub.links.key.hex() not in response.text, path
        settings = await client.get("/settings")
        assert "**********" in settings.text


async def test_security_headers(console_env: ConsoleEnv) -> None:
    async with httpx.AsyncClient(base_url=console_env.url) as client:
        response = await client.get("/")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"
        rebinding = await client.get("/", headers={"host": "evil.example"})
        assert rebinding.status_code == 400


async def test_read_only_viewer_sees_the_live_table_only_until_revoked(
    console_env: ConsoleEnv,
) -> None:
    client, csrf = await _dm(console_env)
    async with contextlib.aclosing(client):
        made = await client.post("/share", data={"action": "create", "csrf": csrf})
        link = re.search(r'value="(http://[^"]+/view/[^"]+)"', made.text)
        assert link is not None
        viewer = httpx.AsyncClient(base_url=console_env.url)
        async with viewer:
            opened = await viewer.get(link.group(1).removeprefix(console_env.url))
            assert opened.status_code == 303
            assert (await viewer.get("/")).status_code == 200
            for path in PAGES[1:]:
                assert (await viewer.get(path)).status_code == 403, path
            page = await viewer.get("/")
            csrf_viewer = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)
            assert csrf_viewer is not None
            refused = await viewer.post(
                "/share", data={"action": "create", "csrf": csrf_viewer.group(1)}
            )
            assert refused.status_code == 403
            await client.post("/share", data={"action": "revoke", "csrf": csrf})
            assert (await viewer.get("/")).status_code == 401


async def test_glyphoxa_console_link_logs_the_dm_in(
    console_env: ConsoleEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    code = await asyncio.to_thread(
        main, ["--config", str(console_env.config_path), "console", "link"]
    )
    assert code == 0
    link = capsys.readouterr().out.strip()
    assert link.startswith(f"{console_env.url}/login/")
    async with httpx.AsyncClient(base_url=console_env.url) as client:
        response = await client.get(link.removeprefix(console_env.url), follow_redirects=True)
        assert response.status_code == 200 and "Log out" in response.text
