"""``/iam`` and ``/character`` through real ``discord.Interaction`` objects and the real cog,
over a real TableSession with a real campaign memory (SQLite): players bind themselves, the DM
binds anyone, a player cannot bind another, and the binding is in the memory store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.frontends.discord_bot import TableParts, TableRuntime
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.session import TableSession
from campaigns.memory import MemoryStore

from .discord_api import user
from .test_commands import (
    DM_ROLE,
    DM_USER,
    EXAMPLE,
    GUILD,
    PLAYER,
    REFUSAL,
    Harness,
    interaction,
    opt,
    sub,
)
from .test_commands import harness as harness  # the fixture


def with_member(payload: dict[str, Any], who: int, name: str) -> dict[str, Any]:
    """The resolved member Discord sends with a ``player`` (user) option."""
    member = {"roles": [], "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False,
              "mute": False, "flags": 0, "permissions": "0"}  # fmt: skip
    payload["data"]["resolved"] = {"users": {str(who): user(who, name)},
                                   "members": {str(who): member}}  # fmt: skip
    return payload


def player_opt(who: int) -> dict[str, Any]:
    return opt("player", str(who), kind=6)


@pytest.fixture
async def table(harness: Harness, whisper_stt: Any, tmp_path: Path) -> AsyncIterator[TableSession]:
    from bot.audio.speech import EspeakTts
    from npcs.campaign import load_campaign

    memory = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    session = build_session(
        config=GlyphoxaConfig(), campaign=load_campaign(EXAMPLE), stt=whisper_stt,
        tts=EspeakTts(), engines=lambda npc: None, memory=memory,
    )  # fmt: skip
    await session.start()
    harness.cog.tables[GUILD] = TableRuntime(TableParts(session, memory=memory), None)
    try:
        yield session
    finally:
        harness.cog.tables.clear()
        await session.stop()
        await memory.close()


async def test_a_player_binds_themselves_and_everyone_sees_it(
    harness: Harness, table: TableSession
) -> None:
    reply = await harness.run(interaction("iam", [opt("character", "Arin")], member=PLAYER))
    assert reply["content"] == "player plays **Arin**."
    assert not reply.get("flags")  # public: the table learns who plays whom
    assert table.characters.name_for(str(PLAYER), "player") == "Arin"
    stored = await table.memory.character_bindings(table.campaign.name)
    assert [(b.user_id, b.character, b.bound_by) for b in stored] == [
        (str(PLAYER), "Arin", "player")
    ]
    reply = await harness.run(interaction("character", sub("list"), member=PLAYER))
    assert reply["content"] == f"- **Arin**: <@{PLAYER}> (bound by player)" and reply["flags"] & 64
    reply = await harness.run(interaction("character", sub("unbind"), member=PLAYER))
    assert reply["content"] == "player goes by their own name again."
    assert await table.memory.character_bindings(table.campaign.name) == []


async def test_names_that_are_npcs_or_taken_are_refused_privately(
    harness: Harness, table: TableSession
) -> None:
    reply = await harness.run(interaction("iam", [opt("character", "Bartok")], member=PLAYER))
    assert reply["flags"] & 64
    assert reply["content"].startswith("Character name 'Bartok' is the NPC Bartok's name")
    await harness.run(interaction("iam", [opt("character", "Arin")], member=DM_USER))
    reply = await harness.run(interaction("iam", [opt("character", "arin")], member=PLAYER))
    assert reply["content"].startswith("Arin is already played by another player")
    reply = await harness.run(interaction("character", sub("unbind"), member=PLAYER))
    assert reply["content"] == "That player has no character bound." and reply["flags"] & 64


async def test_the_dm_binds_a_player_and_a_player_cannot(
    harness: Harness, table: TableSession
) -> None:
    payload = interaction("iam", [opt("character", "Arin"), player_opt(DM_USER)], member=PLAYER)
    reply = await harness.run(with_member(payload, DM_USER, "dm"))
    assert reply["content"].startswith(REFUSAL) and "`/iam` without `player`" in reply["content"]
    assert table.characters.bindings() == []
    payload = interaction(
        "character", sub("bind", player_opt(PLAYER), opt("character", "Tobble")),
        member=DM_USER, roles=(DM_ROLE,),
    )  # fmt: skip
    reply = await harness.run(with_member(payload, PLAYER, "player"))
    assert reply["content"] == "player plays **Tobble**."
    (bound,) = table.characters.bindings()
    assert (bound.user_id, bound.character, bound.bound_by) == (str(PLAYER), "Tobble", "dm")
    payload = interaction("iam", [opt("character", "Mira"), player_opt(PLAYER)],
                          member=DM_USER, roles=(DM_ROLE,))  # fmt: skip
    reply = await harness.run(with_member(payload, PLAYER, "player"))
    assert reply["content"] == "player plays **Mira**."
    payload = interaction("character", sub("unbind", player_opt(PLAYER)), member=PLAYER)
    reply = await harness.run(with_member(payload, PLAYER, "player"))  # themselves: allowed
    assert reply["content"] == "player goes by their own name again."
    payload = interaction("character", sub("bind", player_opt(PLAYER), opt("character", "X")),
                          member=PLAYER)  # fmt: skip
    reply = await harness.run(with_member(payload, PLAYER, "player"))
    assert reply["content"] == REFUSAL


async def test_without_a_session_iam_says_how_to_start(harness: Harness) -> None:
    reply = await harness.run(interaction("iam", [opt("character", "Arin")], member=PLAYER))
    assert reply["flags"] & 64 and "/session start" in reply["content"]
