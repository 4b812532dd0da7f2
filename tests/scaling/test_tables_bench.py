"""The machinery of ``glyphoxa bench tables`` measures real work: one simulated table, opened by
the production ``open_table`` with remote-style providers, hears its players through the DAVE
receive path, answers through the production playback (only while there is audio), and sends
nothing but keepalives once its players are quiet."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.bench.doubles.instant_audio import InstantAudio
from bot.bench.doubles.instant_llm import InstantLlm
from bot.bench.tables.run import Step, _results
from bot.bench.tables.sim_table import SimTable
from bot.bench.tables.sim_world import EXAMPLE, bench_config, player_line
from bot.frontends.discord_bot.tables import configured_tables


@pytest.mark.slow
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
            window = table.reset_window()
            table.hush()
            async with asyncio.timeout(30):
                while table.busy:  # noqa: ASYNC110 - the table's own tasks finish the turn
                    await asyncio.sleep(0.05)
            table.reset_window()
            await asyncio.sleep(1.0)  # a quiet table
            quiet = table.reset_window()
        finally:
            await table.stop()
            for close in reversed(parts.closers):
                await close()
    assert window.failed == 0 and len(window.v2v_ms) == 2
    # After the player's last voiced frame (an answer may start at the pause, before the VAD's
    # hangover ends the line: early transcripts), and well within a FAST turn.
    assert all(0 < ms < 5000 for ms in window.v2v_ms), window.v2v_ms
    # Two answers went out, each ended by five silence frames, and a quiet table sends no audio.
    assert window.frames > 2 * 5 and table.playback.utterances >= 2
    assert quiet.frames == 0 and not table.playback.talking
    counters = table.receiver.snapshot()
    assert counters.accepted >= 2 * len(opus) - 10 and counters.dropped["dave_failed"] == 0
    spoken = [body for route, body in audio.requests if route == "speech"]
    assert spoken and all(body["model"] == "tts-1" for body in spoken)
    assert any("Bartok" in str(body["messages"][0]) for body in llm.requests)


def _step(tables: int, cpu: float, late: float, v2v: float) -> Step:
    return Step(
        tables=tables, seconds=30.0, cpu_share=cpu, rss_mb=230 + 15 * tables,
        late_share_worst=late, raw_late_share_worst=late, max_late_ms=25.0,
        machine_late_share=0.0, v2v_ms=[v2v] * 5, turns=5 * tables, failed=0,
    )  # fmt: skip


def test_the_figures_follow_the_rules() -> None:
    steps = [
        _step(1, 0.10, 0.0, 600), _step(2, 0.20, 0.0, 610), _step(4, 0.40, 0.0, 650),
        _step(8, 0.80, 0.004, 640), _step(6, 0.60, 0.0, 700),
    ]  # fmt: skip
    figures = {r.name: r.value for r in _results(steps, 30.0)}
    # 8 missed its deadline (0.4 % late), 6 was too slow (700 > 1.1 x 600 ms): 4 is the answer.
    assert figures["tables per process (largest N keeping every deadline)"] == 4
    assert figures["CPU per table"] == pytest.approx(10.0)
    assert figures["memory per table"] == pytest.approx(15.0)
    assert figures["tables per core"] == pytest.approx(10.0)
    assert figures["FAST voice-to-voice p50 at that N"] == 650


def test_a_machine_too_busy_for_one_table_says_so() -> None:
    figures = _results([_step(1, 0.1, 0.02, 600), _step(2, 0.2, 0.03, 600)], 30.0)
    largest = figures[0]
    assert largest.value == 0 and "the machine is too busy" in largest.method
    assert {r.name: r.value for r in figures}["tables per core"] == pytest.approx(10.0)


async def test_the_players_line_sounds_finished_wherever_the_pause_falls() -> None:
    """The bench measures capacity, not endpointing luck: Smart Turn hears its line as finished
    wherever the pause falls (the old line scored 0.08-0.92 10 ms apart, so each turn waited
    200 or 500 ms by chance and one table's p50 flipped between 360 and 590 ms)."""
    import discord.opus
    import numpy as np
    import soxr

    from bot.audio.speech.turn_model import SmartTurnModel

    model = SmartTurnModel()
    scores: list[float] = []
    under: list[int] = []
    for _ in range(3):  # libopus's encode of the same PCM differs from one encoder to the next
        opus, voiced = await player_line()
        decoder = discord.opus.Decoder()
        stereo = np.frombuffer(b"".join(decoder.decode(f) for f in opus[: voiced + 10]), "<i2")
        left = stereo.reshape(-1, 2)[:, 0].astype(np.float32) / 32768
        mono = soxr.resample(left, 48_000, 16_000)
        end = voiced * 320  # 20 ms frames at 16 kHz: the end of the last voiced frame
        sweep = [model.probability(mono[: end + k * 160]) for k in range(-4, 20)]  # 10 ms apart
        under.append(sum(p < 0.5 for p in sweep))
        scores += sweep
    # the old line: 6-9 of 24 alignments under 0.5 per encode; this one 0-1 (3 seen once)
    assert sum(under) <= 6, (under, [round(p, 2) for p in scores])
    assert float(np.median(scores)) > 0.8, [round(p, 2) for p in scores]
