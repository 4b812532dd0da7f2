"""A DM runs a rehearsal from the console, in Debian's chromium.

The rehearsal is the real pipeline (synthesized players, Silero VAD, Whisper, addressing,
tiers, the tool host, Piper) with the scripted LLM server, which asks for a dice roll whenever
it may. Bartok's rolls wait for the DM. In one scene the DM logs in with a link, watches the
player's line and the turns arrive live, approves the roll and sees Bartok answer with its
result, mutes Bartok (he then stays silent when addressed), puppets Greymantle with a line full
of markup (shown as text), and edits Greymantle's file while the table runs: a mistake shows
inline at its line, the fix saves and the running table reloads it. Every update's latency
(the event's time to its arrival in the page) is measured.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import yaml

from bot.console.feed import TableFeed
from bot.rehearsal.runner import rehearse
from bot.rehearsal.scene import load_scene
from campaigns.bench_result import percentile

from .conftest import ConsoleEnv, logged_in_page, screenshot

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]

MARKUP = "<img src=x onerror=alert(1)> {{ 7*7 }} [click](javascript:alert(1)) <script>x()</script>"
FIXED = "A keen-eyed sage of the Emberford archive, patient and precise."


def _scene(env: ConsoleEnv) -> Path:
    path = env.root / "scene.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "title": "Console night",
                "campaign": str(env.campaign),
                "players": {"Arin": {"provider": "espeak", "voice": "en-us"}},
                "lines": [
                    {"at": 0.5, "speaker": "Arin", "text": "Bartok, roll a die for me."},
                    {"at": 32, "speaker": "Arin", "text": "Greymantle, what do you know?"},
                ],
                "tail_s": 40,
            }
        )
    )
    return path


async def _until(check, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_dm_runs_a_rehearsal_from_the_console(console_env: ConsoleEnv, browser) -> None:  # type: ignore[no-untyped-def]
    env = console_env
    page = await logged_in_page(browser, env)
    assert "No table is running" in await page.content()
    scene = load_scene(_scene(env))
    task = asyncio.create_task(
        rehearse(scene, env.config, env.root / "out", console=env.hub, playout_speed=4.0)
    )
    try:
        await _until(lambda: bool(env.hub.tables) or task.done(), 240)
        feed: TableFeed = next(iter(env.hub.tables.values()))
        session = feed.session
        await page.goto(env.url + "/")
        assert page.url.endswith(f"/tables/{feed.id}")
        await page.reload()
        load_ms = await page.evaluate(
            "performance.getEntriesByType('navigation')[0].loadEventEnd"
        )
        print(f"live page load: {load_ms:.0f} ms")
        assert load_ms < 300

        # Mute Greymantle first: his status says so at once.
        greymantle = page.locator('.npc[data-npc="Greymantle"]')
        await greymantle.locator("form[hx-post$='/control/mute'] button").click()
        await greymantle.locator(".badge.muted-badge").wait_for(timeout=10_000)
        assert session.is_muted("Greymantle")

        # The player's words arrive live, then the roll waits for the DM.
        await page.locator("#transcript .line.player").first.wait_for(timeout=90_000)
        approve = page.locator("#approvals button[value=approve]")
        await approve.wait_for(timeout=60_000)
        assert "roll" in await page.locator("#approvals").inner_text()
        await screenshot(page, "live-approval", full=False)
        await approve.click()
        card = page.locator("#turns .turn").first
        await card.wait_for(timeout=60_000)
        text = await card.inner_text()
        assert "roll(" in text and "ok" in text and "addressed" in text
        assert await card.locator("svg.bar rect").count() >= 3  # the latency bar, by stage
        tool_results = [
            m["content"] for r in env.llm.requests for m in r["messages"] if m["role"] == "tool"
        ]
        assert any('"total"' in content for content in tool_results)  # Bartok used the roll
        await page.locator("#stats table.stats").wait_for()

        # Puppet Vessa with markup: it is shown as text, never run.
        vessa = page.locator('.npc[data-npc="Captain Vessa"]')
        await vessa.locator("form[hx-post$='/control/say'] input[name=text]").fill(MARKUP)
        await vessa.locator("form[hx-post$='/control/say'] button").click()
        said = page.locator("#transcript .line.npc", has_text="onerror")
        await said.wait_for(timeout=60_000)
        heard = await said.inner_text()  # what the voice said (Markdown symbols dropped)
        assert "<img src=x onerror=alert(1)" in heard and "<script" in heard and "{{" in heard
        puppeted = page.locator("#transcript .line.dm", has_text="onerror")
        assert MARKUP in await puppeted.inner_text()  # the DM's line, exactly as typed
        assert await page.locator("#transcript img, #transcript script").count() == 0

        # Edit Greymantle while the table runs: the mistake inline, then the fix reloads.
        editor = await page.context.new_page()
        await editor.goto(env.url + "/npcs/greymantle.yaml/edit")
        original = await editor.locator("#npc-text").input_value()
        broken = original.replace("budget_tier: deep", "budget_tier: sideways")
        assert broken != original
        await editor.locator("#npc-text").fill(broken)
        wrong_line = broken.splitlines().index("budget_tier: sideways") + 1
        flagged = editor.locator(f"#margin > div:nth-child({wrong_line}).err")
        await flagged.wait_for(timeout=20_000)
        assert "budget_tier" in await editor.locator("#issue-list").inner_text()
        assert await editor.locator(f"#gutter > div:nth-child({wrong_line}).err").count() == 1
        await screenshot(editor, "editor-error", full=False)
        await editor.locator("#save").click()
        await editor.locator("#issue-list", has_text="not saved").wait_for(timeout=20_000)
        assert "sideways" not in (env.campaign / "npcs" / "greymantle.yaml").read_text()
        fixed = _with_personality(original, FIXED)
        await editor.locator("#npc-text").fill(fixed)
        await editor.locator("#issue-list", has_text="glyphoxa check passes").wait_for()
        await editor.locator("#save").click()
        await editor.locator("#issue-list", has_text="Saved greymantle.yaml").wait_for()
        notice = editor.locator("#notices .notice", has_text="reloaded Greymantle")
        await notice.wait_for(timeout=20_000)
        assert session.campaign.npcs["Greymantle"].personality == FIXED
        await screenshot(editor, "editor-saved", full=False)
        await editor.close()

        # Greymantle, muted, stays silent when addressed; the scene then ends.
        result = await asyncio.wait_for(task, 180)
        await page.locator("#ended", has_text="ended").wait_for(timeout=10_000)
        await screenshot(page, "live-table")
    finally:
        if not task.done():
            task.cancel()
    npcs_answering = [turn["npc"] for turn in result.turns if turn["heard"]]
    assert npcs_answering == ["Bartok"], "muted Greymantle answered the second line"
    routed = [r for r in result.events if r["type"] == "routed"]
    assert routed[-1]["reason"] == "muted"
    assert "no NPC answers: muted" in await page.locator("#transcript").inner_text()

    latencies = [item["ms"] for item in await page.evaluate("window.glyphoxa.latencies")]
    assert len(latencies) >= 20
    p95 = percentile([float(ms) for ms in latencies], 95)
    print(f"console update latency: p50 {percentile(latencies, 50):.0f} ms, p95 {p95:.0f} ms")
    assert p95 < 200, f"updates reached the page in {p95:.0f} ms (p95)"
    assert page.errors == []


def _with_personality(text: str, personality: str) -> str:
    data = yaml.safe_load(text)
    data["personality"] = personality
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


async def test_end_session_ends_the_rehearsal(console_env: ConsoleEnv, browser) -> None:  # type: ignore[no-untyped-def]
    env = console_env
    path = env.root / "long-scene.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "title": "Ended early",
                "campaign": str(env.campaign),
                "players": {"Arin": {"provider": "espeak", "voice": "en-us"}},
                "lines": [{"at": 60, "speaker": "Arin", "text": "Bartok, hello."}],
                "tail_s": 90,
            }
        )
    )
    page = await logged_in_page(browser, env)
    task = asyncio.create_task(
        rehearse(load_scene(path), env.config, env.root / "out-ended", console=env.hub)
    )
    try:
        await _until(lambda: bool(env.hub.tables) or task.done(), 240)
        await page.goto(env.url + "/")
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        started = time.monotonic()
        await page.locator("button", has_text="End session").click()
        result = await asyncio.wait_for(task, 60)
        assert time.monotonic() - started < 30  # long before the line at 60 s
        await page.locator("#ended", has_text="ended").wait_for(timeout=10_000)
    finally:
        if not task.done():
            task.cancel()
    assert result.turns == []
    assert not env.hub.tables
