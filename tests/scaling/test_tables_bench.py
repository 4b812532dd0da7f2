"""The machinery of ``glyphoxa bench tables`` measures real work: one simulated table, opened by
the production ``open_table`` with remote-style providers, hears its players through the DAVE
receive path, answers, and its player thread keeps the 20 ms clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.discord_bot.tables import configured_tables
from bot.rehearsal.instant_audio import InstantAudio
from bot.rehearsal.instant_llm import InstantLlm
from bot.rehearsal.sim_table import SimTable
from bot.rehearsal.sim_world import EXAMPLE, bench_config, player_line

pytestmark = pytest.mark.slow


async def test_a_simulated_table_answers_its_players(tmp_path: Path) -> None:
    opus, voiced = await player_line()
    assert 40 < voiced < len(opus)  # a spoken line, then the quiet that ends it
    async with InstantLlm() as llm, InstantAudio(seconds_per_char=0.02) as audio:
        config = bench_config({"llm": llm.base_url, "audio": audio.base_url}, tmp_path)
        parts = await configured_tables(config, str(EXAMPLE))(None)
        table = SimTable(0, parts.session, opus, voiced, asyncio.get_running_loop())
        table.prepare(2)
        table.start()
        try:
            async with asyncio.timeout(60):
                while table.window.turns < 2:  # noqa: ASYNC110 - the table's own task counts
                    await asyncio.sleep(0.05)
        finally:
            await table.stop()
            for close in reversed(parts.closers):
                await close()
    window = table.window
    assert window.failed == 0 and len(window.v2v_ms) == 2
    # After the player's last voiced frame (an answer may start at the pause, before the VAD's
    # hangover ends the line: early transcripts), and well within a FAST turn.
    assert all(0 < ms < 5000 for ms in window.v2v_ms), window.v2v_ms
    assert window.frames > 100  # the player thread ran its 20 ms clock all along
    counters = table.receiver.snapshot()
    assert counters.accepted >= 2 * len(opus) - 10 and counters.dropped["dave_failed"] == 0
    spoken = [body for route, body in audio.requests if route == "speech"]
    assert spoken and all(body["model"] == "tts-1" for body in spoken)
    assert any("Bartok" in str(body["messages"][0]) for body in llm.requests)
