"""Never miss the DM's turn, in Debian's chromium: a tool approval seen from any page (badge,
count, countdown, "denied: no answer" at its timeout), the offline banner when the bot stops,
controls that fail loudly beside themselves, every form working without JavaScript, the home
page that moves to the table when it starts, an ended table's URL that leads to its record,
the editor guarded and usable from the keyboard, and the live table's own tools (everyone's
controls, ambience, the night's timer, bookmarks that reach the recap, search).

The approvals are asked through the real gate the tool host uses (``ToolApprovals.decide``),
so each question's timing is the test's, not a model's.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bot.frontends.console import console_for
from tools.host.approval import ApprovalRequest

from .conftest import ConsoleEnv, live_table, logged_in_page, screenshot, wait_until_true

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]


def _ask(feed: Any, timeout_s: float, expression: str = "1d20") -> asyncio.Task[Any]:
    request = ApprovalRequest(
        npc="Bartok", tool="roll", server="dice", arguments={"expression": expression},
        timeout_s=timeout_s,
    )  # fmt: skip
    return asyncio.create_task(feed.session.tools.approvals.decide(request))


async def test_an_approval_reaches_every_page_and_says_how_it_ended(
    console_env: ConsoleEnv, browser: Any
) -> None:
    env = console_env
    async with live_table(env) as feed:
        page = await logged_in_page(browser, env)
        await page.goto(env.url + "/npcs/greymantle.yaml/edit")  # busy editing another NPC
        await page.locator("#count-approvals").wait_for(state="attached")
        asked = time.monotonic()
        timed_out = _ask(feed, 4.0)
        badge = page.locator("#count-approvals", has_text="1")
        await badge.wait_for(timeout=10_000)
        seen_s = time.monotonic() - asked
        card = page.locator("#dock .approval.waiting")
        assert "roll" in await card.inner_text() and "s left" in await card.inner_text()
        await screenshot(page, "approval-elsewhere", full=False)
        decision = await asyncio.wait_for(timed_out, 20)
        assert decision.outcome == "timeout"
        await page.locator("#dock .approval", has_text="denied: no answer").wait_for(timeout=5_000)
        await page.locator("#count-approvals").wait_for(state="hidden", timeout=5_000)

        await page.goto(env.url + "/cast")  # the next one is answered from the cast page
        answered = _ask(feed, 30.0, "2d6")
        await page.locator("#dock .approval.waiting button[value=approve]").click()
        decision = await asyncio.wait_for(answered, 10)
        assert decision.approved and decision.by == "DM"
        await page.locator("#dock .approval", has_text="approved by DM").wait_for()
    print(f"an approval reached the editor page's badge in {seen_s * 1000:.0f} ms")
    assert seen_s < 2.0, f"the approval took {seen_s:.2f} s to show on another page"
    assert page.errors == []
    await page.context.close()


async def test_the_page_says_when_the_bot_is_gone(console_env: ConsoleEnv, browser: Any) -> None:
    env = console_env
    config = env.config.model_copy(deep=True)
    config.console.link_file = str(env.root / "gone-console.json")
    server = console_for(config, config_path=None, campaign_dir=env.campaign)
    await server.start()
    stopped = False
    try:
        async with live_table(env, "The night that ends", hub=server.hub) as feed:
            page = await logged_in_page(browser, server)
            assert page.url.endswith(f"/tables/{feed.id}")
            mute = page.locator('.npc[data-npc="Bartok"] form[action$="/control/mute"] button')
            await mute.wait_for()
            await wait_until_true(page, "window.glyphoxa.streams.table.up === true")
            await server.stop()  # the bot stops
            stopped = True
            banner = page.locator("#offline")
            await banner.wait_for(state="visible", timeout=10_000)
            assert "Connection to the bot lost" in await banner.inner_text()
            assert await mute.is_disabled()
            await screenshot(page, "offline", full=False)
            await page.wait_for_timeout(2500)  # a retry or two, quietly
            assert not [line for line in page.logged if "[object" in line], page.logged
    finally:
        if not stopped:
            await server.stop()
    await page.context.close()


async def test_every_form_works_without_javascript(console_env: ConsoleEnv, browser: Any) -> None:
    env = console_env
    async with live_table(env) as feed:
        page = await logged_in_page(browser, env, java_script_enabled=False)
        methods: list[tuple[str, str]] = []
        page.on("request", lambda request: methods.append((request.method, request.url)))
        await page.goto(env.url + f"/tables/{feed.id}")
        assert "JavaScript is off" in await page.locator("body").inner_text()
        vessa = page.locator('.npc[data-npc="Captain Vessa"] form[action$="/control/mute"]')
        await vessa.locator("button").click()
        await page.locator(".flash.ok", has_text="Muted").wait_for()
        assert feed.session.controls.is_muted("Captain Vessa")
        await page.locator("a.button", has_text="Back").click()
        await page.wait_for_url(f"**/tables/{feed.id}")
        await page.wait_for_load_state("load")  # a reload during that navigation detaches the page
        pending = _ask(feed, 30.0)
        await page.reload()  # without JavaScript the page shows what was there when it loaded
        await page.locator("#dock button[value=deny]").click()
        assert (await asyncio.wait_for(pending, 10)).outcome == "denied"

    bartok = env.campaign / "npcs" / "bartok.yaml"
    before = bartok.read_text()
    await page.goto(env.url + "/npcs/bartok.yaml/edit")
    await page.locator("#npc-text").fill(before.replace("name: Bartok", "name: ["))
    await page.locator("#save").click()
    await page.locator("#issue-list", has_text="not saved").wait_for()
    assert bartok.read_text() == before
    await page.locator("#npc-text").fill(before)
    await page.locator("#save").click()
    await page.locator("#issue-list", has_text="Saved bartok.yaml").wait_for()
    changes = [(m, u) for m, u in methods if "/save" in u or "/control/" in u or "approvals" in u]
    assert changes and all(method == "POST" for method, _url in changes), changes
    assert not [u for _m, u in methods if "text=" in u], "a form sent its fields in a URL"
    await page.context.close()


async def test_the_home_page_follows_the_table_and_its_url_outlives_it(
    console_env: ConsoleEnv, browser: Any
) -> None:
    env = console_env
    page = await logged_in_page(browser, env)
    assert "No table is running" in await page.content()
    await wait_until_true(page, "window.glyphoxa.streams.pulse.up === true")
    async with live_table(env, "A night to remember") as feed:
        await page.wait_for_url(f"**/tables/{feed.id}", timeout=10_000)
        session = feed.session
        night = page.locator("#night .timer")
        assert "min" in await night.inner_text()

        # Everyone's controls, each answering beside itself.
        everyone = page.locator(".everyone")
        await everyone.locator("form[action$='/control/mute'] button").click()
        said = "form[action$='/control/mute'] output"
        await everyone.locator(said, has_text="Muted every NPC").wait_for()
        assert all(session.controls.is_muted(n) for n in session.campaign.npcs)
        await everyone.locator("form[action$='/control/unmute'] button").click()
        said = "form[action$='/control/unmute'] output"
        await everyone.locator(said, has_text="may speak").wait_for()
        tier = everyone.locator("form[action$='/control/tier']")
        await tier.locator("select").select_option("deep")
        await tier.locator("input[name=minutes]").fill("9999")  # out of range: said, not sent
        await tier.locator("button").click()
        await tier.locator("output", has_text="minutes").wait_for()
        await tier.locator("input[name=minutes]").fill("5")
        await tier.locator("button").click()
        await tier.locator("output", has_text="Tier deep for all NPCs for 5 min").wait_for()
        ambience = everyone.locator("form[action$='/control/ambience']")
        await ambience.locator("input[name=volume]").fill("40")
        await ambience.locator("select").select_option("tavern")
        await ambience.locator("button").click()
        await ambience.locator("output", has_text="Playing tavern").wait_for()
        assert session.mixer.ambience.now_playing is not None
        assert abs(session.mixer.ambience.volume - 0.4) < 1e-9
        mark = everyone.locator("form[action$='/control/bookmark']")
        await mark.locator("input[name=text]").fill("the vault door opens")
        await mark.locator("button").click()
        await mark.locator("output", has_text="joins the recap").wait_for()

        # The transcript says what the DM did, and searches as the DM types.
        await page.locator("#transcript .line.dm", has_text="bookmark").wait_for()
        await page.fill("#transcript-search", "vault")
        visible = await page.locator("#transcript > li:visible").all_inner_texts()
        assert visible and all("vault" in line for line in visible)
        await screenshot(page, "live-everyone", full=False)
        table_id = feed.id
    await page.locator("#ended a", has_text="Its record").wait_for(timeout=10_000)
    await page.goto(env.url + f"/tables/{table_id}")  # the URL outlives the table
    assert "/sessions/" in page.url
    await page.locator(".recap", has_text="the vault door opens").wait_for()
    assert page.errors == []
    await page.context.close()


async def test_the_editor_guards_edits_and_works_from_the_keyboard(
    console_env: ConsoleEnv, browser: Any
) -> None:
    env = console_env
    page = await logged_in_page(browser, env)
    await page.goto(env.url + "/npcs/vessa.yaml/edit")
    text = page.locator("#npc-text")
    await text.focus()
    await page.keyboard.press("End")
    await page.keyboard.press("Tab")  # indents
    assert (await text.input_value()).endswith("  ") or "  " in await text.input_value()
    assert await page.evaluate("document.activeElement.id") == "npc-text"
    await page.keyboard.press("Escape")
    await page.keyboard.press("Tab")  # leaves the editor
    assert await page.evaluate("document.activeElement.id") == "save"
    ring = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert ring not in ("", "none"), "the focused button shows no focus ring"

    dialogs: list[str] = []

    async def refuse(dialog: Any) -> None:
        dialogs.append(dialog.type)
        await dialog.dismiss()

    page.on("dialog", lambda dialog: asyncio.ensure_future(refuse(dialog)))
    await page.locator("nav a", has_text="Cast").click()
    await page.wait_for_timeout(500)
    assert dialogs == ["beforeunload"] and page.url.endswith("/npcs/vessa.yaml/edit")
    await page.context.close()
