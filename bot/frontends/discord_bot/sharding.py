"""Discord sharding as discord.py implements it: one process runs some of the bot's shards.

Discord spreads a bot's guilds over ``shard_count`` gateway connections (guild ``g`` rides on
shard ``(g >> 22) % shard_count``) and requires sharding above 2,500 guilds. ``glyphoxa run
--shard-count N --shard-ids 0,1`` starts :class:`ShardedGlyphoxaBot` (``commands.AutoShardedBot``)
with those shards, so several processes, on one machine or several, split the shards between
them; a guild's voice table runs in the process that holds its shard (voice state updates go
out on that shard's connection). Every process must be given the same ``--shard-count``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from discord.ext import commands

from bot.frontends.discord_bot.bot import GlyphoxaBot
from bot.frontends.discord_bot.runtime import RuntimeFactory
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError

__all__ = ["ShardedGlyphoxaBot", "make_bot", "parse_shard_ids"]


class ShardedGlyphoxaBot(GlyphoxaBot, commands.AutoShardedBot):
    """:class:`GlyphoxaBot` on discord.py's ``AutoShardedBot``: one gateway connection per shard
    in ``shard_ids`` (all of ``range(shard_count)`` when None), one process."""


def parse_shard_ids(text: str | None, shard_count: int | None) -> list[int] | None:
    """``"0,1,4-6"`` -> ``[0, 1, 4, 5, 6]``, checked against ``shard_count``; None: every shard."""
    if shard_count is not None and shard_count < 1:
        raise GlyphoxaError(f"--shard-count must be at least 1, not {shard_count}")
    if text is None or not text.strip():
        return None
    if shard_count is None:
        raise GlyphoxaError("--shard-ids needs --shard-count (the total over every process)")
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        try:
            first, last = (int(low), int(high)) if dash else (int(part), int(part))
        except ValueError:
            raise GlyphoxaError(
                f"--shard-ids: {part!r} is not a shard number or range (e.g. 0,1 or 0-3)"
            ) from None
        if first > last:
            raise GlyphoxaError(f"--shard-ids: range {part!r} runs backwards")
        ids.extend(range(first, last + 1))
    wrong = [i for i in ids if not 0 <= i < shard_count]
    if wrong:
        raise GlyphoxaError(
            f"--shard-ids: shard {wrong[0]} does not exist with --shard-count {shard_count} "
            f"(shards are 0..{shard_count - 1})"
        )
    if len(set(ids)) != len(ids):
        raise GlyphoxaError("--shard-ids: a shard is listed twice")
    return ids


def make_bot(
    config: GlyphoxaConfig,
    runtime_factory: RuntimeFactory,
    *,
    shard_count: int | None = None,
    shard_ids: Sequence[int] | None = None,
    **options: Any,
) -> GlyphoxaBot:
    """A plain bot without ``shard_count``, else the sharded one with those shards."""
    if shard_count is None:
        return GlyphoxaBot(config, runtime_factory, **options)
    return ShardedGlyphoxaBot(
        config,
        runtime_factory,
        shard_count=shard_count,
        shard_ids=list(shard_ids) if shard_ids is not None else None,
        **options,
    )
