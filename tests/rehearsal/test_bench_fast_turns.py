"""``glyphoxa bench e2e`` keeps each FAST turn's words and stages in its JSON, so the slow turn
behind a p95 can be named (the instant scripted LLM: the pipeline's floor, real speech models)."""

from __future__ import annotations

import pytest

from bot.bench import e2e as bench
from bot.bench.e2e_goals import goals_for
from bot.bench.e2e_scenes import FAST_LINES
from bot.bench.machine import describe_machine
from bot.settings.loader import load_config
from campaigns.basics import percentile

pytestmark = pytest.mark.slow


async def test_the_fast_bench_names_every_turn_and_its_stages() -> None:
    config = bench._with_instant_llm(load_config(None))
    goals = goals_for(describe_machine().flags)
    tally = bench._Tally()
    p50, p95 = await bench._fast_set(config, "instant LLM", tally, goals, full_table=False)
    assert p50.goal == f"<= {goals.floor_p50_ms:.0f} ms" and goals.machine in p50.method
    turns = p50.extra["turns"]  # type: ignore[index]
    assert len(turns) == p50.extra["n"] >= len(FAST_LINES) - 1, turns  # type: ignore[index]
    v2v = [turn["stages_ms"]["voice_to_voice"] for turn in turns]
    assert abs(percentile(v2v, 50) - p50.value) <= 1 and abs(percentile(v2v, 95) - p95.value) <= 1
    for turn in turns:
        assert turn["heard"] and {"endpoint", "tts_first_audio"} <= turn["stages_ms"].keys()
        assert isinstance(turn["reply"], str) and isinstance(turn["repairs"], dict)  # explained
