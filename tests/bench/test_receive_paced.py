"""``glyphoxa bench receive``'s paced figure runs one player through three receive paths, one of
them the baseline tree from git history, where the audio room was still ``bot`` itself; a path
that cannot load its code must fail here, not in an operator's benchmark run."""

from __future__ import annotations

import pytest

from bot.bench.receive_paced import paced_cpu

pytestmark = pytest.mark.slow


async def test_every_receive_path_plays_a_player_at_pace() -> None:
    rows = await paced_cpu(rounds=1, seconds=2.0)
    paths = [row for row in rows if row.name.startswith("receive + lane CPU")]
    assert [row.name.split("(")[1][:6] for row in paths] == ["before", "16 kHz", "now: 1"]
    assert all(row.extra["turns_ended"] >= 1 for row in paths), [r.extra for r in paths]
    assert "not measured" not in str(paths[-1].extra.get("before", "")), paths[-1].extra
