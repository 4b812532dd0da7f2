"""A DM runs a rehearsal from the console, in Debian's chromium.

The rehearsal is the real pipeline (synthesized players, Silero VAD, Whisper, addressing,
tiers, the tool host, Piper) with the scripted LLM server, which asks for a dice roll whenever
it may; Bartok's rolls wait for the DM. The DM logs in with a link, mutes Greymantle, watches
the player's line and the turns arrive live, approves the roll and sees Bartok answer with its
result, puppets Captain Vessa with a line full of markup (shown as text), edits Greymantle's
file while the table runs (a mistake shows inline at its line, the fix saves and the running
table reloads it), hears a player address muted Greymantle and nobody answer, then ends the
session from the console, long before the scene's last line. Every update's latency (the
event's time to its arrival in the page) is measured; its p95 must stay under 200 ms once the
time the machine held up the bot's event loop while that update travelled is taken off (a probe
measures it at the same time: on a machine shared with other work, that wait is not the
console's).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.audio.speech import STT_FRAME_BYTES, VoiceRouter
from bot.frontends.console.feed import TableFeed
from bot.frontends.rehearsal.players import synthesize_lines
from bot.frontends.rehearsal.runner import rehearse
from bot.frontends.rehearsal.scene import PlayerLine, Scene, load_scene
from campaigns.basics import percentile
from campaigns.providers.voices import VoiceSettings

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
                    {"at": 600, "speaker": "Arin", "text": "Bartok, are you still there?"},
                ],
                "tail_s": 600,
            }
        )
    )
    return path


async def _until(check, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def _loop_lag(lags: list[tuple[float, float]]) -> None:
    """How late the event loop wakes a 10 ms sleep: (wall time it woke, ms late), until
    cancelled."""
    while True:
        before = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append((time.time() * 1000, (time.monotonic() - before - 0.01) * 1000))


def _machine_late(lags: list[tuple[float, float]], sent: float, ms: float) -> float:
    """The longest the bot's event loop was held up while one update travelled (from its event
    to its arrival in the page, plus the probe's own 10 ms): time the machine took from the
    bot, not the console's cost."""
    return max((late for woke, late in lags if sent <= woke <= sent + ms + 10), default=0.0)


async def test_a_dm_runs_a_rehearsal_from_the_console(console_env: ConsoleEnv, browser) -> None:  # type: ignore[no-untyped-def]
    env = console_env
    lags: list[tuple[float, float]] = []
    probe = asyncio.create_task(_loop_lag(lags))
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
        await page.wait_for_url(f"**/tables/{feed.id}", timeout=30_000)  # the page follows it
        await page.reload()
        load_ms = await page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        print(f"live page load: {load_ms:.0f} ms")
        assert load_ms < 300

        # Mute Greymantle first: his status says so at once.
        greymantle = page.locator('.npc[data-npc="Greymantle"]')
        await greymantle.locator("form[hx-post$='/control/mute'] button").click()
        await greymantle.locator(".badge.muted-badge").wait_for(timeout=10_000)
        assert session.controls.is_muted("Greymantle")

        # Give Captain Vessa a mood from her card: the answer beside it, a badge on her card,
        # her seat (what her answers are told and a resumed table keeps).
        vessa = page.locator('.npc[data-npc="Captain Vessa"]')
        mood = vessa.locator("form[hx-post$='/control/mood']")
        await mood.locator("input[name=text]").fill("  Weary,  suspicious of the elves. ")
        await mood.locator("button").click()
        await mood.locator("output", has_text="Captain Vessa is Weary").wait_for(timeout=10_000)
        badge = vessa.locator(".badge.mood", has_text="mood: Weary, suspicious of the elves")
        await badge.wait_for(timeout=10_000)
        assert session.seats.seat("Captain Vessa").mood == "Weary, suspicious of the elves"
        assert session.status().npcs["Captain Vessa"].mood == "Weary, suspicious of the elves"

        # The player's words arrive live, then the roll waits for the DM.
        await page.locator("#transcript .line.player").first.wait_for(timeout=90_000)
        approve = page.locator("#dock button[value=approve]")
        await approve.wait_for(timeout=60_000)
        assert "roll" in await page.locator("#dock").inner_text()
        await screenshot(page, "live-approval", full=False)
        await approve.click()
        card = page.locator("#turns .turn").first
        await card.wait_for(timeout=60_000)
        text = await card.inner_text()
        assert "roll(" in text and "ok" in text and "addressed" in text
        assert await card.locator("svg.bar rect").count() >= 3  # the latency bar, by stage
        # Bartok was told the roll's result (the table rolls a roll asked for itself)
        told = [
            m["content"] for r in env.llm.requests for m in r["messages"] if m["role"] != "system"
        ]
        assert any('"total"' in c or "You just rolled" in c for c in told)
        await page.locator("#stats table.stats").wait_for()

        # Puppet Vessa with markup: it is shown as text, never run.
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

        # Greymantle, muted, stays silent when a player addresses him.
        await _player_says(session, "Bram", "Greymantle, what do you know?")
        await page.locator("#transcript .line.routed", has_text="muted").wait_for(timeout=60_000)
        await asyncio.sleep(1.0)  # an answer would have been queued by now
        assert [t.npc for t in session.traces if t.heard] == ["Bartok"]

        # End session: the rehearsal stops long before its last line (at 600 s).
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        await page.locator("button", has_text="End session").click()
        result = await asyncio.wait_for(task, 60)
        await page.locator("#ended", has_text="ended").wait_for(timeout=10_000)
        await screenshot(page, "live-table")
    finally:
        probe.cancel()
        if not task.done():
            task.cancel()
    assert [turn["npc"] for turn in result.turns if turn["heard"]] == ["Bartok"]
    assert not env.hub.tables
    assert "no NPC answers: muted" in await page.locator("#transcript").inner_text()

    arrivals = await page.evaluate("window.glyphoxa.latencies")
    assert len(arrivals) >= 20
    latencies = [float(item["ms"]) for item in arrivals]
    own = [
        max(0.0, float(item["ms"]) - _machine_late(lags, item["sent"], item["ms"]))
        for item in arrivals
    ]
    p95, own_p95 = percentile(latencies, 95), percentile(own, 95)
    print(
        f"console update latency: p50 {percentile(latencies, 50):.0f} ms, p95 {p95:.0f} ms; "
        f"less the bot's event loop held up by the machine meanwhile: p95 {own_p95:.0f} ms"
    )
    assert own_p95 < 200, f"updates reached the page in {own_p95:.0f} ms (p95)"
    assert page.errors == []


async def _player_says(session: Any, speaker: str, text: str) -> None:
    """A player's line into the running table, frame by frame at real time, as the rehearsal
    pushes its scripted lines."""
    line = PlayerLine(at=0, speaker=speaker, text=text)
    scene = Scene(lines=[line], players={speaker: VoiceSettings(provider="espeak", voice="en-us")})
    (audio,) = await synthesize_lines(scene, VoiceRouter())
    frames = [audio.pcm[i : i + STT_FRAME_BYTES] for i in range(0, len(audio.pcm), STT_FRAME_BYTES)]
    frames += [bytes(STT_FRAME_BYTES)] * 75  # 1.5 s of quiet: the turn ends
    started = time.monotonic()
    for n, frame in enumerate(frames):
        session.push_frame("player-bram", speaker, frame)
        await asyncio.sleep(max(0.0, started + (n + 1) * 0.02 - time.monotonic()))


def _with_personality(text: str, personality: str) -> str:
    data = yaml.safe_load(text)
    data["personality"] = personality
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
