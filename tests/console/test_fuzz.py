"""Malformed input against every route of the real console: 4xx, never 500, never a traceback.

Every route the app serves (read from its own routing table, so a new route is fuzzed too) is
called as nobody, as a read-only viewer and as the DM, with malformed path parts (non-ASCII,
30 and 5,000 digits, paths, NUL), malformed queries and ``Last-Event-ID`` headers, and, for
changes, malformed forms (non-ASCII and missing CSRF tokens, invalid UTF-8, out-of-range
numbers, huge fields, broken multipart). A symlink loop sits in ``npcs/`` all the while, and a
live table is watched. The console's log must hold no traceback and no error line afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from starlette.routing import Mount, Route

from .conftest import ConsoleEnv, live_table, quick_client

pytestmark = pytest.mark.asyncio(loop_scope="session")

PATH_VALUES = [
    "1", "bartok.yaml", "loop.yaml", "missing.yaml", "é", "1.x.%C3%A9", "%C3%A9%00", "9" * 30,
    "9" * 5000, "..%2F..%2Fglyphoxa.yaml", "-1", "a" * 300, "%FF%FE", "mute", "x.yaml%2F..",
]  # fmt: skip
QUERIES = ["", "?after=" + "9" * 5000, "?after=é", "?q=" + "%FF" * 50, "?text=" + "é" * 2000,
           "?after=-1&q=%00"]  # fmt: skip
EVENT_IDS = ["9" * 5000, "é.1", "1." + "9" * 5000, "-3", "0x10"]


def _form_bodies(csrf: str) -> list[tuple[dict[str, Any], bytes | dict[str, str]]]:
    """(headers, body) pairs: forms nobody should be able to make the console fail with."""
    form = "application/x-www-form-urlencoded"
    good = {"X-CSRF-Token": csrf}
    bodies: list[tuple[dict[str, Any], bytes | dict[str, str]]] = [
        ({}, {"csrf": "é" * 10}),
        ({"X-CSRF-Token": "é".encode()}, {"npc": "Bartok"}),
        ({}, {}),
        ({"content-type": form}, b"csrf=%FF%FE&text=%FF&npc=%C3"),
        ({"content-type": "multipart/form-data; boundary=x"}, b"--x\r\ngarbage"),
        ({"content-type": "multipart/form-data"}, b"no boundary"),
        ({"content-type": "application/json"}, b'{"csrf": 1}'),
        (
            good,
            {
                "npc": "é" * 500,
                "tier": "sideways",
                "minutes": "1e400",
                "turns": "nan",
                "decision": "maybe",
                "action": "explode",
                "text": "x" * 5000,
            },
        ),
        (good, {"npc": "Bartok", "tier": "fast", "minutes": "-5", "turns": "9" * 40}),
        (good, {"npc": "Bartok", "minutes": "inf", "turns": "1.5", "volume": "200"}),
        (good, {"npc": "", "text": "", "mood": "é" * 100, "volume": "nan", "q": "%"}),
        ({**good, "content-type": form}, b"csrf=" + csrf.encode() + b"&text=%FF%FE%FD"),
        (good, {"csrf": csrf, "text": "name: [unclosed\n\t- \x00"}),
    ]
    return bodies


@pytest_asyncio.fixture(loop_scope="session")
async def loop_in_npcs(console_env: ConsoleEnv) -> AsyncIterator[None]:
    """A symbolic link in npcs/ that points at itself (check must report it, pages work)."""
    loop = console_env.campaign / "npcs" / "loop.yaml"
    loop.symlink_to(loop)
    try:
        yield
    finally:
        loop.unlink()


def _routes(app: Any) -> list[tuple[str, str]]:
    found = []
    for route in app.routes:
        if isinstance(route, Route):
            for method in sorted(route.methods or {"GET"}):
                if method != "HEAD":
                    found.append((method, route.path))
        elif isinstance(route, Mount):
            found.append(("GET", route.path + "/{file}"))
    return found


def _paths(template: str, table: str) -> list[str]:
    names = re.findall(r"{(\w+)(?::\w+)?}", template)
    if not names:
        return [template]
    paths = []
    for value in PATH_VALUES:
        path = template
        for name in names:
            part = table if name == "table" and value != PATH_VALUES[4] else value
            path = re.sub(r"{" + name + r"(?::\w+)?}", part, path)
        if path not in paths:
            paths.append(path)
    return paths


async def _status(client: httpx.AsyncClient, url: str, **headers: Any) -> int:
    """The status of a GET, without waiting for a live stream's end."""
    async with client.stream("GET", url, headers=headers) as response:
        return response.status_code


async def _clients(env: ConsoleEnv) -> dict[str, tuple[httpx.AsyncClient, str]]:
    """Nobody, a read-only viewer and the DM, each with its CSRF token."""
    nobody, dm, viewer = (quick_client(env) for _ in range(3))
    page = await dm.get(env.hub.login_url().removeprefix(env.url), follow_redirects=True)
    csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)
    assert csrf is not None
    made = await dm.post("/share", data={"action": "create", "csrf": csrf.group(1)})
    link = re.search(r'value="(http://[^"]+/view/[^"]+)"', made.text)
    assert link is not None
    opened = await viewer.get(link.group(1).removeprefix(env.url), follow_redirects=True)
    viewer_csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', opened.text)
    assert viewer_csrf is not None
    return {
        "nobody": (nobody, ""),
        "viewer": (viewer, viewer_csrf.group(1)),
        "dm": (dm, csrf.group(1)),
    }


def _calls(
    method: str, template: str, table: str, who: str, csrf: str
) -> list[tuple[str, dict[str, Any], Any]]:
    """(path, headers, body) of every malformed call of one route for one client: each bad
    path part with the first body, the first path with every query and body."""
    paths = _paths(template, table)
    if method == "GET":
        return [(paths[0] + query, {}, None) for query in QUERIES] + [
            (path, {}, None) for path in paths[1:]
        ]
    bodies = _form_bodies(csrf)
    if who == "dm" and template.endswith(("/end", "/logout")):
        bodies = bodies[:7]  # with a good token it would end the night or log out
    return [(paths[0], h, b) for h, b in bodies] + [(p, *bodies[0]) for p in paths[1:]]


async def _call(client: httpx.AsyncClient, method: str, path: str, headers: Any, body: Any) -> int:
    if method == "GET":
        return await _status(client, path, **headers)
    sent = {"content": body} if isinstance(body, bytes) else {"data": body}
    response = await client.request(method, path, headers=headers, **sent)
    return response.status_code


async def test_no_input_makes_a_route_fail(
    console_env: ConsoleEnv, loop_in_npcs: None, caplog: pytest.LogCaptureFixture
) -> None:
    env = console_env
    caplog.set_level(logging.WARNING)
    failures: list[str] = []
    calls = 0
    async with live_table(env) as feed:
        clients = await _clients(env)
        try:
            for method, template in _routes(env.server._app):
                for who, (client, csrf) in clients.items():
                    for path, headers, body in _calls(method, template, feed.id, who, csrf):
                        status = await _call(client, method, path, headers, body)
                        calls += 1
                        if status >= 500:
                            failures.append(
                                f"{who} {method} {path[:80]} {str(body)[:60]}: {status}"
                            )
            for value in EVENT_IDS:
                for who, (client, _csrf) in clients.items():
                    events = f"/tables/{feed.id}/events"
                    status = await _status(client, events, **{"last-event-id": value.encode()})
                    calls += 1
                    if status >= 500:
                        failures.append(f"{who} events, Last-Event-ID {value[:20]}: {status}")
        finally:
            for client, _csrf in clients.values():
                await client.aclose()
    print(f"{calls} malformed requests")
    assert not failures, "\n".join(failures[:40])
    noisy = [
        f"{r.name}: {r.getMessage()[:200]}"
        for r in caplog.records
        if r.exc_info or r.levelno >= logging.ERROR or "Traceback" in r.getMessage()
    ]
    assert not noisy, "\n".join(noisy[:20])


async def test_raw_bytes_beyond_ascii_in_the_request_line_get_400(
    console_env: ConsoleEnv, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    host, port = console_env.url.removeprefix("http://").split(":")
    host_line = b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for raw in (b"GET /npcs/\xc3\xa9.yaml/edit" + host_line + b"\r\n",
                b"GET /login/\xff" + host_line + b"\r\n",
                b"GET /" + host_line + b"Cookie: glyphoxa_console=\xff\xfe\r\n\r\n"):  # fmt: skip
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(raw)
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
        assert status.split()[1] in (b"400", b"401", b"404"), (raw, status)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
