"""The console's view of a table never holds the table up: the session hands each event over in
constant time, a page that stops reading is dropped (and told how many updates it missed), and a
console whose task died leaves the table playing. Real table session, real feed and templates."""

from __future__ import annotations

import asyncio

from conftest import Table

from bot.frontends.console.feed import TableFeed
from bot.frontends.console.render import Renderer
from bot.table.session.events import NpcSpoke, SpeakingChanged


async def test_a_page_that_stops_reading_is_dropped_and_the_table_plays_on(table: Table) -> None:
    feed = TableFeed("1", "test table", table.session, Renderer())
    feed.start()
    try:
        stuck, _ = feed.subscribe(dm=True, after=None)  # never reads
        reading, _ = feed.subscribe(dm=False, after=None)
        got: list[str] = []

        async def read() -> None:
            while (message := await reading.queue.get()) is not None:
                got.append(message.name)

        reader = asyncio.create_task(read())
        for n in range(1, 41):
            table.driver.say("Arin", f"Bartok, question number {n}?")
            await table.driver.run_until(lambda n=n: len(table.driver.of_type(NpcSpoke)) == n)
        assert stuck.missed > 0  # told how many it missed; its stream ends with None
        assert stuck.queue.qsize() <= 400
        assert "line" in got and "stats" in got
        assert not any(name in ("npcs", "running", "approvals") for name in got)  # DM only
        reader.cancel()
    finally:
        await feed.stop()


async def test_a_dead_console_leaves_the_table_playing(table: Table) -> None:
    feed = TableFeed("1", "test table", table.session, Renderer())
    feed.start()
    assert feed._task is not None
    feed._task.cancel()  # the console's task died
    for n in range(1, 4):
        table.driver.say("Arin", f"Bartok, again {n}?")
        await table.driver.run_until(lambda n=n: len(table.driver.of_type(NpcSpoke)) == n)
    assert feed.dropped == 0 or len(feed._inbox) <= 4096
    await feed.stop()
    assert feed.see not in table.session.watchers


async def test_the_console_sees_a_player_start_and_stop_speaking(table: Table) -> None:
    """Presence lights up while a player talks and goes out after (both edges reach it)."""
    feed = TableFeed("1", "test table", table.session, Renderer())
    feed.start()
    try:
        changes: list[tuple[str, bool]] = []
        table.session.watchers.append(
            lambda e: (
                changes.append((e.speaker, e.speaking)) if isinstance(e, SpeakingChanged) else None
            )
        )
        table.driver.say("Arin", "Bartok, are you listening?")
        # The feed hears the table's events on its own task: on a busy machine a moment later
        # than the watcher, so each edge is waited for where it must arrive.
        await table.driver.run_until(lambda: ("Arin", True) in changes)
        await table.driver.run_until(lambda: feed.speaking == {"Arin"})
        await table.driver.run_until(lambda: ("Arin", False) in changes)
        await table.driver.run_until(lambda: feed.speaking == set())
        assert changes[:2] == [("Arin", True), ("Arin", False)]
    finally:
        await feed.stop()
