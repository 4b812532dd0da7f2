"""``glyphoxa run --shard-count N --shard-ids ...``: shard lists, and clear errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.frontends.discord_bot import GlyphoxaBot
from bot.frontends.discord_bot.sharding import ShardedGlyphoxaBot, make_bot, parse_shard_ids
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError


def test_shard_lists_and_ranges() -> None:
    assert parse_shard_ids("0,1", 4) == [0, 1]
    assert parse_shard_ids(" 2-4 , 7", 8) == [2, 3, 4, 7]
    assert parse_shard_ids(None, 4) is None  # every shard of the count
    assert parse_shard_ids(None, None) is None  # not sharded


@pytest.mark.parametrize(
    ("ids", "count", "message"),
    [
        ("0,1", None, "--shard-ids needs --shard-count"),
        ("2", 2, "shard 2 does not exist with --shard-count 2"),
        ("1,1", 2, "a shard is listed twice"),
        ("a", 2, "'a' is not a shard number or range"),
        ("3-1", 4, "range '3-1' runs backwards"),
        (None, 0, "--shard-count must be at least 1"),
    ],
)
def test_bad_shard_arguments_are_clear_errors(
    ids: str | None, count: int | None, message: str
) -> None:
    with pytest.raises(GlyphoxaError, match=message.replace("-", r"\-").replace("'", "'")):
        parse_shard_ids(ids, count)


async def test_the_bot_is_sharded_only_when_asked() -> None:
    config = GlyphoxaConfig()

    async def factory(campaign: str | None) -> object:
        raise AssertionError("no table is opened here")

    plain = make_bot(config, factory)  # type: ignore[arg-type]
    sharded = make_bot(config, factory, shard_count=4, shard_ids=[1, 3])  # type: ignore[arg-type]
    # Never started, so there is nothing to close (no HTTP session, no gateway).
    assert type(plain) is GlyphoxaBot and plain.shard_count is None
    assert isinstance(sharded, ShardedGlyphoxaBot)
    assert sharded.shard_count == 4 and sharded.shard_ids == [1, 3]


def test_glyphoxa_run_refuses_a_shard_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--shard-count", "2", "--shard-ids", "0,2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (
        "error: --shard-ids: shard 2 does not exist with --shard-count 2 (shards are 0..1)"
    )
