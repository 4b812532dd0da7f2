"""Campaign preparation in the browser: the cast with a voice preview, what an NPC sees, the
world graph, past sessions with search, the review queue, settings; each page loads fast, shows
markup as text and is saved as a screenshot. Runs after the live test (its session is listed)."""

from __future__ import annotations

import pytest

from bot.table.assembly.memory import open_memory

from .conftest import ConsoleEnv, logged_in_page, screenshot

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]

FACT = "<script>alert(1)</script> Bartok owes {{ 7*7 }} gold to [the Watch](javascript:x)"
DRAGON = "Bartok is secretly a dragon."


_TIMING = "performance.getEntriesByType('navigation')[0].loadEventEnd"
_MACHINE: list[float] = []
"""Loads of the console's stylesheet, each right before a page: what the machine adds now."""


async def _load(page, url: str) -> float:  # type: ignore[no-untyped-def]
    """Open ``url`` three times, each right after the console's own stylesheet (a file served as is:
    the machine's own wait at that moment); the quicker time from the request to the page's
    load event, in ms. The machine is shared: one load may wait for another process."""
    times, machine = [], []
    for _ in range(3):
        await page.goto("/".join(url.split("/", 3)[:3]) + "/static/console.css")
        machine.append(float(await page.evaluate(_TIMING)))
        response = await page.goto(url)
        assert response is not None and response.ok, url
        times.append(float(await page.evaluate(_TIMING)))
    _MACHINE.append(min(machine))
    return min(times)


async def _past_session(memory) -> None:  # type: ignore[no-untyped-def]
    """A finished night of two answered turns, as a table records it (with each NPC line's
    latency by stage), so the sessions page has something to show on its own."""
    session_id = await memory.start_session("The Example", title="A quiet night")
    at = 1_800_000_000.0
    for n, (player, answer) in enumerate(
        [("Bartok, what is on tap?", "Ale, and plenty."), ("Bartok, and food?", "Stew.")]
    ):
        start = at + n * 20
        await memory.add_utterance(session_id, "Arin", player, started_at=start, ended_at=start + 2)
        stages = {"endpoint": 400.0, "stt_final": 180.0 + n, "llm_first_token": 300.0,
                  "tts_first_audio": 90.0, "voice_to_voice": 1100.0 + n}  # fmt: skip
        await memory.add_utterance(
            session_id, "Bartok", answer, npc="Bartok", started_at=start + 3,
            ended_at=start + 5, tier="fast", stages=stages,
        )  # fmt: skip
    await memory.end_session(session_id, summary="Arin asked Bartok about the tap and food.")


async def test_prep_pages(console_env: ConsoleEnv, browser) -> None:  # type: ignore[no-untyped-def]
    env = console_env
    memory = await open_memory(env.config, summarize=False, seed=True)  # the entities too
    try:
        fact_id = await memory.propose_fact("Bartok", FACT)
        dragon_id = await memory.propose_fact("Whisper", DRAGON, entity_id="bartok")
        await _past_session(memory)
    finally:
        await memory.close()
    page = await logged_in_page(browser, env)
    loads: dict[str, float] = {}

    loads["cast"] = await _load(page, env.url + "/cast")
    assert await page.locator("table.cast tbody tr").count() == 4
    wav = await page.evaluate(
        """async () => { const r = await fetch('/npcs/bartok.yaml/voice.wav');
           const body = new Uint8Array(await r.arrayBuffer());
           return [r.status, r.headers.get('content-type'), body.length,
                   String.fromCharCode(...body.slice(0, 4))]; }"""
    )
    assert wav[0] == 200 and wav[1] == "audio/wav" and wav[3] == "RIFF" and wav[2] > 8000
    await page.locator(".play[data-src]").first.click()  # plays through the page's own Audio
    await screenshot(page, "cast")

    await page.goto(env.url + "/npcs/bartok.yaml/sees")  # the first builds a tool host
    loads["npc sees"] = await _load(page, env.url + "/npcs/bartok.yaml/sees")
    body = await page.locator("main").inner_text()
    assert "system prompt" in body.lower() and "You are Bartok" in body and "roll" in body
    await screenshot(page, "npc-sees")

    loads["world"] = await _load(page, env.url + "/world")
    assert await page.locator("svg.graph g.node").count() >= 10
    assert await page.locator("svg.graph g.edge").count() >= 5
    await screenshot(page, "world")

    loads["sessions"] = await _load(page, env.url + "/sessions")
    await page.locator("table.cast a").first.click()
    await page.locator("ol.transcript li").first.wait_for()
    assert await page.locator("table.stats").count() == 1  # latency kept with the NPC lines
    await page.locator(".chart .uplot").wait_for()
    await page.fill("input[name=q]", "tap")
    await page.click("form.row button")
    lines = await page.locator("ol.transcript li").all_inner_texts()
    assert lines and all("tap" in line.lower() for line in lines)
    await screenshot(page, "session")

    loads["review"] = await _load(page, env.url + "/review")
    fact = page.locator(f"#fact-{fact_id}")
    assert FACT in await fact.locator("textarea").input_value()
    assert await page.locator("main script").count() == 0
    await screenshot(page, "review")
    await fact.locator("textarea").fill("Bartok owes 49 gold to the Watch.")
    await fact.locator("button[value=approve]").click()
    await page.locator(f"#fact-{fact_id}", has_text="approved").wait_for()
    dragon = page.locator(f"#fact-{dragon_id}")
    assert "about Bartok" in await dragon.inner_text()  # the entity's name, not only its id
    await dragon.locator("button[value=reject]").click()
    await page.locator(f"#fact-{dragon_id}", has_text="rejected").wait_for()
    await page.reload()  # the decided list: who decided, and the NPC's words beside an edit
    decided = await page.locator("ul.decided").inner_text()
    assert f"#{dragon_id} Whisper about Bartok: {DRAGON} by the DM (console)" in decided
    assert f"(edited; Bartok proposed: {FACT})" in decided  # shown as text, never as markup
    assert await page.locator("main script").count() == 0
    memory = await open_memory(env.config, summarize=False, seed=False)
    try:
        approved = await memory.list_facts("approved")
        bartok = await memory.get_summary("bartok")
    finally:
        await memory.close()
    assert [f["text"] for f in approved if f["id"] == fact_id] == [
        "Bartok owes 49 gold to the Watch."
    ]
    assert DRAGON not in str(bartok)  # a rejected proposal never reaches an NPC

    loads["settings"] = await _load(page, env.url + "/settings")
    assert "sk-console-test" not in await page.content()
    await screenshot(page, "settings")
    print("page loads (ms):", {name: round(ms) for name, ms in loads.items()})
    print("a static file's load meanwhile (ms):", [round(ms) for ms in _MACHINE])
    own = {name: ms - machine for (name, ms), machine in zip(loads.items(), _MACHINE, strict=True)}
    slow = {name: ms for name, ms in own.items() if ms > 300}
    assert not slow, f"pages slower than 300 ms beyond a static file's load: {slow}"
    assert page.errors == []
