"""An accessibility audit of every console page with axe-core (vendored for the tests only,
tests/console/vendor/), in the dark and the light theme and on a phone: no serious or critical
issue against WCAG 2.2 A and AA. On a phone the transcript comes first and nothing is wider
than the screen. The audit's screenshots are the docs' pictures of the phone and light pages.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from tools.host.approval import ApprovalRequest

from .conftest import ConsoleEnv, live_table, logged_in_page, screenshot

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]

AXE = Path(__file__).parent / "vendor" / "axe-core-4.14.1.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
LOOKS = {
    "dark": {"color_scheme": "dark", "width": 1440, "height": 960},
    "light": {"color_scheme": "light", "width": 1440, "height": 960},
    "phone": {
        "color_scheme": "dark",
        "width": 390,
        "height": 844,
        "is_mobile": True,
        "has_touch": True,
    },
}


async def _audit(page: Any) -> list[str]:
    """Serious and critical axe violations of the page, one line each."""
    await page.add_script_tag(path=str(AXE))
    result = await page.evaluate(
        "async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}}))"
        ".violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)}))",
        TAGS,
    )
    return [
        f"{v['impact']} {v['id']} ({v['help']}): {' | '.join(v['nodes'])}"
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


async def test_every_page_passes_the_audit_in_both_themes_and_on_a_phone(
    console_env: ConsoleEnv, browser: Any
) -> None:
    env = console_env
    problems: list[str] = []
    async with live_table(env, "Audit night") as feed:
        waiting = asyncio.create_task(  # the approval card on every page is audited too
            feed.session.tools.approvals.decide(
                ApprovalRequest("Bartok", "roll", "dice", {"expression": "1d20"}, timeout_s=300)
            )
        )
        pages = [
            "/", f"/tables/{feed.id}", "/cast", "/npcs/bartok.yaml/edit", "/npcs/bartok.yaml/sees",
            "/world", "/sessions", "/review", "/settings", "/share",
        ]  # fmt: skip
        for look, options in LOOKS.items():
            width, height = options["width"], options["height"]
            extra = {k: v for k, v in options.items() if k not in ("width", "height")}
            page = await logged_in_page(
                browser, env, width=width, height=height, bypass_csp=True, **extra
            )
            sessions = await page.goto(env.url + "/sessions")
            assert sessions is not None
            record = re.search(r'href="(/sessions/[0-9a-f]+)"', await page.content())
            for path in pages + ([record.group(1)] if record else []):
                await page.goto(env.url + path)
                problems += [f"{look} {path}: {p}" for p in await _audit(page)]
                if look == "phone":
                    wide = await page.evaluate(
                        "document.documentElement.scrollWidth - window.innerWidth"
                    )
                    if wide > 1:
                        problems.append(
                            f"phone {path}: the page is {wide} px wider than the screen"
                        )
            if look == "phone":
                await page.goto(env.url + f"/tables/{feed.id}")
                talk = await page.locator(".col.talk").bounding_box()
                people = await page.locator(".col.people").bounding_box()
                assert talk and people and talk["y"] < people["y"], "the transcript comes first"
                assert talk["y"] < height / 2, f"the transcript starts {talk['y']:.0f} px down"
                assert await page.locator("#npc-drawer").get_attribute("open") is None
                await screenshot(page, "phone-live")
            if look == "light":
                await page.goto(env.url + f"/tables/{feed.id}")
                await screenshot(page, "light-live", full=False)
            await page.context.close()
        viewer_problems = await _viewer_audit(env, browser, feed.id)
        waiting.cancel()
    problems += viewer_problems
    assert not problems, "\n".join(problems)


async def _viewer_audit(env: ConsoleEnv, browser: Any, table: str) -> list[str]:
    """The read-only page and the login help, as a player and a stranger see them."""
    page = await logged_in_page(browser, env, bypass_csp=True, color_scheme="light")
    await page.goto(env.url + "/share")
    await page.locator("button[value=create]").click()
    link = await page.locator("#share-link").input_value()
    await page.context.close()
    context = await browser.new_context(bypass_csp=True, color_scheme="light")
    viewer = await context.new_page()
    await viewer.goto(link)
    found = [f"viewer /tables/{table}: {p}" for p in await _audit(viewer)]
    stranger = await browser.new_context(bypass_csp=True)
    lost = await stranger.new_page()
    await lost.goto(env.url + "/cast")
    found += [f"stranger /cast (401): {p}" for p in await _audit(lost)]
    await context.close()
    await stranger.close()
    return found
