"""Knowledge graph seeded from the example campaign's entities.yaml, and DM-approved facts."""

from __future__ import annotations

import pytest

from campaigns.basics import GlyphoxaError
from campaigns.content import EntitiesFile, EntitySeed, RelationSeed
from campaigns.memory import MemoryStore


@pytest.fixture
async def seeded(store: MemoryStore, example_entities: EntitiesFile) -> MemoryStore:
    await store.seed_entities(example_entities)
    return store


async def test_seed_is_idempotent_and_updates(
    store: MemoryStore, example_entities: EntitiesFile
) -> None:
    count, relations = await store.seed_entities(example_entities)
    assert count == len(example_entities.entities) and relations == len(example_entities.relations)
    assert await store.seed_entities(example_entities) == (count, 0)
    changed = EntitiesFile(
        entities=[EntitySeed(name="Bartok", type="npc", description="Retired barkeep.")]
    )
    await store.seed_entities(changed)
    [bartok] = await store.query_entities("bartok")
    assert bartok["description"] == "Retired barkeep." and bartok["aliases"] == []


async def test_query_by_name_alias_typo_and_type(seeded: MemoryStore) -> None:
    assert (await seeded.query_entities("Bartok"))[0]["id"] == "bartok"
    assert (await seeded.query_entities("bart"))[0]["id"] == "bartok"  # alias
    assert [e["id"] for e in await seeded.query_entities("Bartock")] == ["bartok"]  # STT typo
    assert [e["id"] for e in await seeded.query_entities("greymantel")] == ["greymantle"]
    assert await seeded.query_entities("zzzqqq") == []
    locations = await seeded.query_entities(type="location")
    assert locations and {e["type"] for e in locations} == {"location"}
    assert "emberford" in {e["id"] for e in locations}
    assert {e["id"] for e in await seeded.query_entities("mill", type="location")} >= {
        "the-old-mill"
    }
    assert await seeded.query_entities("Bartok", type="location") == []
    with pytest.raises(GlyphoxaError, match="unknown entity type"):
        await seeded.query_entities(type="dragon")
    assert await seeded.query_entities("100%_") == []  # LIKE wildcards are literal


async def test_get_summary_has_neighbours(seeded: MemoryStore, example_entities) -> None:
    summary = await seeded.get_summary("bartok")
    assert summary["name"] == "Bartok" and summary["type"] == "npc"
    expected = {(r.type, r.target) for r in example_entities.relations if r.source == "bartok"} | {
        (r.type, r.source) for r in example_entities.relations if r.target == "bartok"
    }
    got = {(r["type"], r["entity"]["id"]) for r in summary["relations"]}
    assert got == expected and got
    assert (await seeded.get_summary("The Rusty Flagon"))["id"] == "the-rusty-flagon"
    with pytest.raises(GlyphoxaError, match=r"no entity with id 'bartk'.*did you mean bartok"):
        await seeded.get_summary("bartk")


async def test_relation_to_unknown_entity_is_refused_and_writes_nothing(
    store: MemoryStore,
) -> None:
    bad = EntitiesFile(
        entities=[EntitySeed(name="Lonely", type="npc")],
        relations=[
            RelationSeed.model_validate({"from": "lonely", "type": "knows", "to": "nobody"})
        ],
    )
    with pytest.raises(GlyphoxaError, match="unknown entity 'nobody'"):
        await store.seed_entities(bad)
    assert await store.query_entities() == []


async def test_npc_facts_wait_for_dm_approval(seeded: MemoryStore) -> None:
    approved = await seeded.propose_fact(
        "Bartok", "Bartok owes the Black Candle forty gold crowns.", entity_id="bartok"
    )
    rejected = await seeded.propose_fact(
        "Whisper", "Bartok is secretly a dragon.", entity_id="bartok"
    )
    assert [f["id"] for f in await seeded.list_facts()] == [approved, rejected]
    assert (await seeded.get_summary("bartok"))["facts"] == []
    assert await seeded.search_facts("forty gold crowns") == []  # not yet approved
    await seeded.approve_fact(approved)
    await seeded.reject_fact(rejected)
    assert await seeded.list_facts() == []
    assert [f["status"] for f in await seeded.list_facts(None)] == ["approved", "rejected"]
    facts = (await seeded.get_summary("bartok"))["facts"]
    assert [f["text"] for f in facts] == ["Bartok owes the Black Candle forty gold crowns."]
    hits = await seeded.search_facts("how much gold does Bartok owe")
    assert hits[0]["kind"] == "fact" and hits[0]["entity_id"] == "bartok"
    assert await seeded.search_facts("dragon") == []
    with pytest.raises(GlyphoxaError, match="already approved"):
        await seeded.approve_fact(approved)
    with pytest.raises(GlyphoxaError, match="no proposal #9999"):
        await seeded.reject_fact(9999)
    with pytest.raises(GlyphoxaError, match="no entity"):
        await seeded.propose_fact("Bartok", "x", entity_id="nobody")
