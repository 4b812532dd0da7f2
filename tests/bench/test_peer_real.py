"""The real comparison: ``compare_with_peer("pipecat")`` creates (or reuses) Pipecat 1.14's
own virtualenv, starts both pipelines on the shared llama.cpp server and alternates the quick
FAST lines. It needs PyPI on first use (about 300 MB, 2-3 min) and several minutes of two cores,
so it runs only when asked: ``GLYPHOXA_TEST_PEER=1``."""

from __future__ import annotations

import math
import os

import pytest

from bot.bench.peer import compare_with_peer

PEER_SKIP = "the real Pipecat peer runs only with GLYPHOXA_TEST_PEER=1"
"""The skip reason (CI allows this one skip: it names it in GLYPHOXA_SKIP_OK)."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("GLYPHOXA_TEST_PEER") != "1", reason=PEER_SKIP),
]


async def test_pipecat_answers_the_same_lines_and_the_ratio_is_reported() -> None:
    said: list[str] = []
    rows = await compare_with_peer("pipecat", quick=True, say=said.append)
    print("\n".join(said))
    for row in rows:
        print(row.describe())
    figures = {row.name.split(" (")[0]: row.value for row in rows}
    assert not math.isnan(figures["pipecat voice-to-voice p50"]), rows[0].method
    assert figures["glyphoxa voice-to-voice p50"] > 0
    for label in ("p50", "p95"):
        ratio = figures[f"glyphoxa / pipecat voice-to-voice {label}"]
        assert 0 < ratio < math.inf
    pairs = rows[0].extra["pairs"]  # type: ignore[index]
    assert [pair["index"] for pair in pairs] == [0, 1, 2, 3, 4] and pairs[0]["warm_up"]
    answered = [pair for pair in pairs[1:] if pair["peer"]["voice_to_voice_ms"] is not None]
    assert len(answered) >= 3, pairs  # Pipecat heard and answered (nearly) every line
    for pair in pairs:  # the same audio bytes went to both
        assert pair["peer"]["extra"]["audio_sha256"] == pair["ours"]["extra"]["audio_sha256"]
