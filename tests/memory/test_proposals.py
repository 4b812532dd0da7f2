"""The review queue of NPC-proposed facts on SQLite and PostgreSQL: who may be named, what waits,
and what an approval, an edit or a rejection changes for the NPCs' lookups."""

from __future__ import annotations

import pytest

from campaigns.basics import GlyphoxaError
from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore
from campaigns.memory.proposals import MAX_FACT_CHARS, MAX_PENDING_PER_NPC
from tools.builtin.memory import MAX_PROPOSED_CHARS


@pytest.fixture
async def seeded(store: MemoryStore, example_entities: EntitiesFile) -> MemoryStore:
    await store.seed_entities(example_entities)
    return store


async def test_entities_are_named_by_id_name_alias_or_one_clear_spelling(
    seeded: MemoryStore,
) -> None:
    for wanted in ("bartok", "Bartok", "bart", "Bartock", "  BARTOK "):
        assert (await seeded.resolve_entity(wanted))["id"] == "bartok", wanted
    assert (await seeded.resolve_entity("Vessa"))["id"] == "vessa"  # part of "Captain Vessa"
    # "Black Candle" is one entity's exact name, though "Black Candle Sigil" starts with it.
    assert (await seeded.resolve_entity("black candle"))["id"] == "black-candle"
    with pytest.raises(GlyphoxaError, match=r"'old' could be .*the-old-mill.*; give the entity's"):
        await seeded.resolve_entity("old")
    with pytest.raises(GlyphoxaError, match="no entity named 'Mirelle' in the campaign"):
        await seeded.resolve_entity("Mirelle")
    with pytest.raises(GlyphoxaError, match="name the entity"):
        await seeded.resolve_entity("  ")


async def test_an_approved_proposal_joins_every_lookup(seeded: MemoryStore) -> None:
    session = await seeded.start_session("emberford")
    number = await seeded.propose_fact(
        "Bartok", "Vessa  hides a silver key under the third floorboard.",
        entity_id="vessa", session_id=session,
    )  # fmt: skip
    [waiting] = await seeded.list_facts()
    assert waiting["id"] == number and waiting["npc"] == "Bartok"
    assert waiting["session_id"] == session and waiting["entity_name"] == "Captain Vessa"
    assert waiting["text"] == "Vessa hides a silver key under the third floorboard."  # spaces
    assert (await seeded.query_entities("Vessa"))[0]["facts"] == []
    assert await seeded.search_facts("silver key floorboard") == []

    approved = await seeded.approve_fact(str(number), by="Dana (Discord)")
    assert approved["status"] == "approved" and approved["decided_by"] == "Dana (Discord)"
    assert approved["original_text"] is None
    assert await seeded.list_facts() == []
    [vessa] = await seeded.query_entities("Vessa")  # what the NPCs' prompts are built from
    assert vessa["facts"] == ["Vessa hides a silver key under the third floorboard."]
    summary = await seeded.get_summary("vessa")
    assert [f["text"] for f in summary["facts"]] == [approved["text"]]
    [hit] = await seeded.search_facts("silver key floorboard")
    assert hit["kind"] == "fact" and hit["text"].startswith("Captain Vessa: Vessa hides")


async def test_edit_then_approve_keeps_the_npcs_words(seeded: MemoryStore) -> None:
    number = await seeded.propose_fact(
        "Whisper", "bartok is scared of the willow", entity_id="bartok"
    )
    fact = await seeded.approve_fact(f"#{number}", text="Bartok avoids the Old Willow after dark.")
    assert fact["text"] == "Bartok avoids the Old Willow after dark."
    assert fact["original_text"] == "bartok is scared of the willow"
    assert (await seeded.query_entities("bartok"))[0]["facts"] == [fact["text"]]
    hits = await seeded.search_facts("willow after dark")
    [hit] = [h for h in hits if h["kind"] == "fact"]  # beside the Old Willow's own description
    assert "scared" not in hit["text"] and hit["text"].endswith("after dark.")


async def test_a_rejected_proposal_is_never_seen(seeded: MemoryStore) -> None:
    number = await seeded.propose_fact(
        "Whisper", "Bartok is secretly a dragon.", entity_id="bartok"
    )
    rejected = await seeded.reject_fact(number, by="command line")
    assert rejected["status"] == "rejected" and rejected["decided_by"] == "command line"
    assert await seeded.list_facts() == []
    assert [f["status"] for f in await seeded.list_facts("rejected")] == ["rejected"]
    assert (await seeded.query_entities("bartok"))[0]["facts"] == []
    assert (await seeded.get_summary("bartok"))["facts"] == []
    assert await seeded.search_facts("dragon") == []


async def test_bad_numbers_and_repeated_decisions_are_refused(seeded: MemoryStore) -> None:
    number = await seeded.propose_fact("Bartok", "Greymantle owes rent.", entity_id="greymantle")
    for bad in ("abc", "0", "-3", "7x", ""):
        with pytest.raises(GlyphoxaError, match="is not a proposal number; use the number"):
            await seeded.approve_fact(bad)
    with pytest.raises(GlyphoxaError, match=r"no proposal #9999; `glyphoxa memory proposals`"):
        await seeded.reject_fact(9999)
    with pytest.raises(GlyphoxaError, match="no proposal #9999"):
        await seeded.get_fact("9999")
    await seeded.reject_fact(number)
    with pytest.raises(GlyphoxaError, match=f"proposal #{number} was already rejected; only a"):
        await seeded.approve_fact(number)
    assert (await seeded.get_summary("greymantle"))["facts"] == []


async def test_text_is_bounded_and_repeats_are_not_queued_twice(seeded: MemoryStore) -> None:
    assert MAX_PROPOSED_CHARS == MAX_FACT_CHARS  # the tool's schema and the store agree
    with pytest.raises(GlyphoxaError, match=f"at most {MAX_FACT_CHARS} fit"):
        await seeded.propose_fact("Bartok", "x" * (MAX_FACT_CHARS + 1), entity_id="bartok")
    with pytest.raises(GlyphoxaError, match="needs some text"):
        await seeded.propose_fact("Bartok", "   ", entity_id="bartok")
    first = await seeded.propose_fact("Bartok", "The cellar floods in spring.", entity_id="bartok")
    again = await seeded.propose_fact(
        "Greymantle", "the cellar floods in spring.", entity_id="bartok"
    )
    assert again == first and len(await seeded.list_facts()) == 1
    with pytest.raises(GlyphoxaError, match=f"at most {MAX_FACT_CHARS} fit"):
        await seeded.approve_fact(first, text="y" * (MAX_FACT_CHARS + 1))
    assert (await seeded.get_fact(first))["status"] == "pending"  # the bad edit changed nothing


async def test_one_npc_cannot_flood_the_queue(seeded: MemoryStore) -> None:
    session = await seeded.start_session("emberford")
    for i in range(MAX_PENDING_PER_NPC):
        await seeded.propose_fact(
            "Whisper", f"Rumour {i}.", entity_id="whisper", session_id=session
        )
    with pytest.raises(GlyphoxaError, match=f"Whisper already has {MAX_PENDING_PER_NPC} proposals"):
        await seeded.propose_fact("Whisper", "One more.", entity_id="whisper", session_id=session)
    await seeded.propose_fact("Bartok", "One more.", entity_id="whisper", session_id=session)
