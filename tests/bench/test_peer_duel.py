"""The peer comparison alternates line by line between two real processes that speak the line
protocol, sends both the same audio bytes, runs the peer's tool calls on our tool host, and
computes each side's p50/p95 and the ratios from what the sides reported. A peer that stops
midway or cannot load is reported in one line, and our side goes on."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from bot.bench import peer as peer_bench
from bot.bench.doubles.instant_llm import InstantLlm
from bot.bench.duel import alternate, duel_results
from bot.bench.e2e_scenes import EXAMPLE_SCENE
from bot.bench.line_protocol import LineRequest
from bot.bench.line_server import LineServer, SideFailed
from bot.bench.our_side import read_wav
from bot.bench.result import BenchResult
from bot.settings.loader import load_config
from campaigns.basics import percentile

REPO = Path(__file__).resolve().parents[2]
TINY = Path(__file__).with_name("tiny_peer.py")


@pytest.fixture(scope="module")
async def lines(tmp_path_factory: pytest.TempPathFactory) -> list[LineRequest]:
    """A warm-up and two FAST lines in the bench's player voice, as the bench writes them."""
    folder = tmp_path_factory.mktemp("lines")
    requests = await peer_bench._lines(load_config(None), folder, True, lambda message: None)
    return requests[:3]


def _tiny(*options: str) -> list[str]:
    return [sys.executable, str(TINY), *options]


def _rows(rows: list[BenchResult]) -> dict[str, float]:
    return {row.name.split(" (")[0]: row.value for row in rows}


@pytest.mark.slow
async def test_our_table_and_a_peer_take_turns_on_the_same_audio(lines: list[LineRequest]) -> None:
    async with InstantLlm() as llm:
        ours = LineServer(
            "glyphoxa",
            [sys.executable, "-m", "bot.bench.our_side", "--llm-base-url", llm.base_url,
             "--campaign", str(EXAMPLE_SCENE.parent)],
            cwd=str(REPO),
        )  # fmt: skip
        async with ours:
            peer = LineServer(
                "tiny",
                _tiny("--answer-ms", "600,900", "--tool", "roll",
                      "--tool-args", '{"expression": "1d1+4"}'),
                on_tool_call=ours.run_tool,
            )  # fmt: skip
            async with peer:
                duel = await alternate(ours, peer, lines)
    persona = ours.ready
    assert persona["npc"] == "Bartok" and persona["system_prompt"].startswith("You are Bartok")
    assert "roll" in [tool["function"]["name"] for tool in persona["tools"]]
    assert [pair.request.index for pair in duel.pairs] == [0, 1, 2]
    for pair in duel.pairs:
        assert pair.peer is not None and pair.ours.answered, pair.ours
        sha = hashlib.sha256(read_wav(pair.request.wav)).hexdigest()[:16]
        assert pair.ours.extra["audio_sha256"] == pair.peer.extra["audio_sha256"] == sha
        assert pair.ours.extra["voiced_end_at"] < pair.peer.extra["received_at"]  # ours first
        # Stages are timed from the line's last voiced frame and come in order. On a busy
        # machine the table may end the turn at the pause after "Great," (then the answer is
        # to that first piece): the turn still ended after the line began.
        turn_end = pair.ours.stages_ms["turn_end"]
        assert -1000 * pair.request.voiced_end_s < turn_end < pair.ours.voice_to_voice_ms  # type: ignore[operator]
    for before, after in zip(duel.pairs, duel.pairs[1:], strict=False):
        assert before.peer is not None
        assert before.peer.extra["received_at"] < after.ours.extra["voiced_end_at"]  # then next
    # the peer's roll ran on our tool host, within Bartok's whitelist: 1d1+4 is always 5
    assert '"total": 5' in duel.pairs[1].peer.reply.replace('"total":5', '"total": 5')  # type: ignore[union-attr]
    rows = duel_results(duel, "glyphoxa", "tiny", "two real processes")
    figures = _rows(rows)
    ours_v2v = [pair.ours.voice_to_voice_ms or 0.0 for pair in duel.measured()]
    assert figures["tiny voice-to-voice p50"] == 600 and figures["tiny voice-to-voice p95"] == 900
    assert figures["glyphoxa voice-to-voice p50"] == percentile(ours_v2v, 50)
    assert figures["glyphoxa / tiny voice-to-voice p50"] == pytest.approx(
        percentile(ours_v2v, 50) / 600
    )
    assert figures["glyphoxa / tiny voice-to-voice p95"] == pytest.approx(
        percentile(ours_v2v, 95) / 900
    )
    pairs = rows[0].extra["pairs"]  # type: ignore[index]
    assert len(pairs) == 3 and pairs[0]["warm_up"] and pairs[2]["peer"]["voice_to_voice_ms"] == 900


async def test_a_peer_that_stops_midway_is_named_and_ours_goes_on(
    lines: list[LineRequest],
) -> None:
    said: list[str] = []
    async with (
        LineServer("ours", _tiny("--answer-ms", "400,500")) as ours,
        LineServer("tiny", _tiny("--answer-ms", "700", "--exit-at", "2")) as peer,
    ):
        duel = await alternate(ours, peer, lines, said.append)
    assert [pair.ours.voice_to_voice_ms for pair in duel.pairs] == [400, 400, 500]
    assert duel.pairs[1].peer is not None and duel.pairs[2].peer is None
    assert duel.peer_failure is not None
    assert "tiny exited (code 3) while line 2" in duel.peer_failure
    assert "told to stop at line 2" in duel.peer_failure
    assert any("ours goes on alone" in message for message in said)
    rows = duel_results(duel, "ours", "tiny", "tiny processes")
    figures = _rows(rows)
    assert figures["tiny voice-to-voice p50"] == 700 and figures["ours voice-to-voice p50"] == 400
    assert figures["ours / tiny voice-to-voice p50"] == pytest.approx(400 / 700)
    assert "tiny stopped after 1 of 2 lines" in rows[0].method


async def test_a_peer_that_cannot_load_fails_in_one_line() -> None:
    side = LineServer("tiny", _tiny("--fail-loading"), ready_timeout_s=60)
    with pytest.raises(SideFailed) as caught:
        await side.start()
    await side.aclose()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("tiny exited (code 1) while loading")
    assert message.endswith("its last error: tiny peer: RuntimeError: no model here")
