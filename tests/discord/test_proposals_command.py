"""``/proposals``: the DM reviews NPC-proposed facts from Discord (real bot, local Discord API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.frontends.discord_bot import TableParts, TableRuntime
from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore
from campaigns.yamlio import load_model

from . import test_commands
from .test_commands import DM_ROLE, EXAMPLE, GUILD, PLAYER, REFUSAL, Harness, interaction, opt, sub

#: The slash-command tests' fixtures: the real bot against the local Discord API, a table.
harness = test_commands.harness
table_session = test_commands.table_session

DM = {"roles": (DM_ROLE,)}


async def _store(harness: Harness, tmp_path: Path) -> tuple[MemoryStore, list[int]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    memory = harness.bot.config.memory.model_copy(update={"url": url})
    harness.bot.config = harness.bot.config.model_copy(update={"memory": memory})
    store = await MemoryStore.open(url)
    await store.seed_entities(load_model(EXAMPLE / "entities.yaml", EntitiesFile).unwrap())
    numbers = [
        await store.propose_fact("Bartok", "Vessa hides a silver key.", entity_id="vessa"),
        await store.propose_fact("Whisper", "bartok fears the willow", entity_id="bartok"),
        await store.propose_fact("Whisper", "Bartok is secretly a dragon.", entity_id="bartok"),
    ]
    return store, numbers


async def test_dm_reviews_proposals_without_a_table(harness: Harness, tmp_path: Path) -> None:
    store, (key, willow, dragon) = await _store(harness, tmp_path)
    try:
        reply = await harness.run(interaction("proposals", sub("list"), **DM))
        assert reply["flags"] & 64  # private
        assert (
            f"**#{key}** Bartok about **Captain Vessa**: Vessa hides a silver key."
            in (reply["content"])
        )
        choices = await harness.run(
            interaction("proposals", sub("approve", opt("id", "drag", focused=True)), kind=4, **DM)
        )
        assert choices["choices"] == [
            {"name": f"#{dragon} Whisper: Bartok is secretly a dragon.", "value": str(dragon)}
        ]
        reply = await harness.run(
            interaction("proposals", sub("approve", opt("id", str(key))), **DM)
        )
        assert reply["content"].startswith(f"Approved: **#{key}** [approved] Bartok about")
        reply = await harness.run(
            interaction(
                "proposals",
                sub("edit", opt("id", f"#{willow}"), opt("text", "Bartok avoids the Old Willow.")),
                **DM,
            )
        )
        assert "Edited and approved" in reply["content"]
        assert "*(edited; Whisper proposed: bartok fears the willow)*" in reply["content"]
        reply = await harness.run(
            interaction("proposals", sub("reject", opt("id", str(dragon))), **DM)
        )
        assert reply["content"].startswith(f"Rejected: **#{dragon}** [rejected]")
        reply = await harness.run(interaction("proposals", sub("list"), **DM))
        assert reply["content"] == "No proposals are waiting."

        facts = (await store.get_summary("bartok"))["facts"]
        assert [f["text"] for f in facts] == ["Bartok avoids the Old Willow."]
        decided = {f["id"]: f["decided_by"] for f in await store.list_facts(None)}
        assert set(decided.values()) == {"dm (Discord)"}

        for bad, said in (
            ("seven", "'seven' is not a proposal number"),
            ("9999", "no proposal #9999"),
            (str(dragon), f"proposal #{dragon} was already rejected"),
        ):
            reply = await harness.run(
                interaction("proposals", sub("approve", opt("id", bad)), **DM)
            )
            assert said in reply["content"] and reply["flags"] & 64
    finally:
        await store.close()


async def test_players_cannot_review_or_see_proposals(harness: Harness, tmp_path: Path) -> None:
    store, (key, _, _) = await _store(harness, tmp_path)
    try:
        reply = await harness.run(interaction("proposals", sub("list"), member=PLAYER))
        assert reply["content"] == REFUSAL and reply["flags"] & 64
        reply = await harness.run(
            interaction("proposals", sub("approve", opt("id", str(key))), member=PLAYER)
        )
        assert reply["content"] == REFUSAL
        choices = await harness.run(
            interaction(
                "proposals", sub("reject", opt("id", "", focused=True)), member=PLAYER, kind=4
            )
        )
        assert choices["choices"] == []
        assert (await store.get_fact(key))["status"] == "pending"
    finally:
        await store.close()


async def test_approval_at_a_running_table_reaches_its_npcs(
    harness: Harness, tmp_path: Path, table_session: Any
) -> None:
    store, (key, _, _) = await _store(harness, tmp_path)
    lookup = table_session.entities
    lookup.memory, lookup.wait_s = store, 10.0  # this table's memory; a loaded machine may lag
    harness.cog.tables[GUILD] = TableRuntime(TableParts(table_session, memory=store), None)
    try:
        before = await lookup.snapshot("Where is Captain Vessa?")
        assert "silver key" not in (before or "")
        await harness.run(interaction("proposals", sub("approve", opt("id", str(key))), **DM))
        after = await lookup.snapshot("Where is Captain Vessa?")
        assert after is not None and after.endswith("Vessa hides a silver key.")
    finally:
        harness.cog.tables.clear()
        lookup.memory, lookup.wait_s = None, 0.15
        lookup.forget()
        await store.close()
