"""``glyphoxa bench memory``: campaign-memory hot paths on generated data.

Goals: ``query_entities`` p50 <= 5 ms; ``search_sessions`` over 100,000 utterances p50
<= 50 ms on SQLite. With ``GLYPHOXA_BENCH_POSTGRES_URL`` set, the same figures are measured on a
throw-away PostgreSQL database created beside the one in the URL (needs CREATEDB).
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import bindparam, insert, select, update

from bot.bench.result import BenchResult
from campaigns.basics import percentile
from campaigns.content import ENTITY_TYPES, EntitiesFile, EntitySeed
from campaigns.memory import MemoryStore
from campaigns.memory.database import write_transaction
from campaigns.memory.models import Chunk, Session, Utterance, table_of

__all__ = ["run_bench"]

log = logging.getLogger(__name__)

_WORDS = """tavern ale mead barkeep sword shield dragon crypt tomb mill river dock smuggler candle
shadow relic sage tome spell ritual guard captain watch gold silver coin debt map key door cellar
tunnel bridge forest willow fey trickster ranger rogue halfling dwarf elf orc goblin troll wolf
horse cart road inn room bed fire torch lantern rope ladder chest lock trap poison potion scroll
wand staff ring amulet crown throne king queen prince noble merchant guild temple priest god
shrine altar bell tower wall gate market square fountain statue ship sail storm night moon star
dawn dusk blood bone skull ghost spirit curse oath promise secret rumour letter seal cult
conspiracy plan ambush fight battle wound heal rest camp journey north south east west""".split()
_COMMON = """the a and to of I you we it is that what where who how this there was have do
not with for on at in my your our they he she be can will just""".split()
_SPEAKERS = ["Arin", "Tobble", "Mira", "Dorn", "Bartok", "Greymantle", "Vessa", "Whisper"]
_QUERIES = [
    "where is the hidden crypt",
    "Black Candle conspiracy shadow relic",
    "what did the barkeep say about the mill",
    "smuggler tunnel under the docks",
    "silver key to the cellar door",
    "who owes gold to the guild",
    "ritual at the temple altar at midnight",
    "ghost in the tower",
]


class _Speech:
    """Generated table talk: function words, campaign words and a long tail of other words.

    Campaign words are drawn Zipf-distributed from ~180 words, the rest from 3,000 pseudo-words,
    so a query word matches roughly 0.3-4 % of lines (live speech is sparser still).
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
        made = {"".join(rng.choices(syllables, k=rng.randint(2, 3))) for _ in range(3200)}
        self.tail = sorted(made)[:3000]
        self.tail_weights = list(accumulate(1.0 / (rank + 1) for rank in range(len(self.tail))))
        self.weights = list(accumulate(1.0 / (rank + 1) ** 0.8 for rank in range(len(_WORDS))))

    def sentence(self) -> str:
        rng = self.rng
        words = []
        for _ in range(rng.randint(6, 18)):
            roll = rng.random()
            if roll < 0.45:
                words.append(rng.choice(_COMMON))
            elif roll < 0.62:
                words.append(rng.choices(_WORDS, cum_weights=self.weights)[0])
            else:
                words.append(rng.choices(self.tail, cum_weights=self.tail_weights)[0])
        return " ".join(words).capitalize() + rng.choice([".", "?", "!"])


async def _populate(store: MemoryStore, utterances: int, entities: int) -> None:
    """Bulk-load generated sessions (1,000 utterances each), chunks and entities."""
    rng = random.Random(42)
    speech = _Speech(rng)
    per_session = 1000
    start = time.time() - 86400 * 365
    async with write_transaction(store._engine) as conn:
        for first in range(0, utterances, per_session):
            session_id = uuid.uuid4().hex
            began = start + first * 10.0
            await conn.execute(
                insert(table_of(Session)).values(
                    id=session_id, campaign="bench", title=f"Session {first // per_session + 1}",
                    started_at=began, ended_at=began + per_session * 10,
                )
            )  # fmt: skip
            rows = []
            for i in range(min(per_session, utterances - first)):
                speaker = rng.choice(_SPEAKERS)
                npc = speaker if speaker in ("Bartok", "Greymantle", "Vessa", "Whisper") else None
                at = began + i * 10.0
                rows.append(
                    {"session_id": session_id, "speaker": speaker, "npc": npc,
                     "text": speech.sentence(), "started_at": at, "ended_at": at + 4.0,
                     "tier": "fast", "interrupted": False}
                )  # fmt: skip
            await conn.execute(insert(table_of(Utterance)), rows)
            chunks = [
                {"kind": "transcript", "session_id": session_id, "text": "\n".join(
                    f"{r['speaker']}: {r['text']}" for r in rows[j : j + 5]), "created_at": began}
                for j in range(0, len(rows), 5)
            ]  # fmt: skip
            await conn.execute(insert(table_of(Chunk)), chunks)
    seeds = [
        EntitySeed(
            id=f"entity-{i}",
            name=f"{rng.choice(_WORDS).capitalize()} {rng.choice(_WORDS).capitalize()} {i}",
            type=rng.choice(ENTITY_TYPES),  # type: ignore[arg-type]
            description=speech.sentence(),
            aliases=[f"{rng.choice(_WORDS)}{i}"],
        )
        for i in range(entities)
    ]
    seeds.append(EntitySeed(name="Bartok", type="npc", aliases=["Bart"]))
    await store.seed_entities(EntitiesFile(entities=seeds))


async def _time(call: Callable[[], Awaitable[Any]], iterations: int) -> list[float]:
    await call()  # warm caches and prepared statements
    samples = []
    for _ in range(iterations):
        began = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - began) * 1000)
    return samples


async def _measure(url: str, backend: str, quick: bool) -> list[BenchResult]:
    utterances = 20_000 if quick else 100_000
    iterations = 30 if quick else 200
    store = await MemoryStore.open(url)
    try:
        began = time.perf_counter()
        await _populate(store, utterances, entities=1000)
        load_s = time.perf_counter() - began
        results = []
        queries = iter(range(10**9))

        async def search() -> Any:
            return await store.search_sessions(_QUERIES[next(queries) % len(_QUERIES)])

        samples = await _time(search, iterations)
        matches = [len(await store.search_sessions(q, limit=utterances)) for q in _QUERIES]
        results.append(_result(
            f"search_sessions p50 ({utterances:,} utterances, {backend})", samples,
            f"{len(_QUERIES)} 3-6 word queries round-robin (each matching "
            f"{min(matches):,}-{max(matches):,} lines), limit 10, {iterations} calls; "
            f"bulk load took {load_s:.1f} s",
            goal="<= 50 ms" if backend == "sqlite" and not quick else None, limit=50.0,
        ))  # fmt: skip
        names = ["Bartok", "bart", "Tavern Ale 17", "entity-500", "crypt"]

        async def lookup() -> Any:
            return await store.query_entities(names[next(queries) % len(names)])

        samples = await _time(lookup, iterations)
        results.append(_result(
            f"query_entities p50 (1,001 entities, {backend})", samples,
            "exact, alias, prefix and substring names round-robin", goal="<= 5 ms", limit=5.0,
        ))  # fmt: skip

        async def typo() -> Any:
            return await store.query_entities("Bartock", type="npc")

        samples = await _time(typo, iterations)
        results.append(_result(
            f"query_entities fuzzy p50 (typo, type=npc, {backend})", samples,
            "no substring hit: close-spelling scan over the type's names", goal="<= 5 ms",
            limit=5.0,
        ))  # fmt: skip

        async def facts() -> Any:
            return await store.search_facts(_QUERIES[next(queries) % len(_QUERIES)])

        samples = await _time(facts, iterations)
        results.append(_result(
            f"search_facts p50 ({utterances // 5:,} chunks, full-text, {backend})", samples,
            "no embeddings configured: BM25/ts_rank over chunks",
        ))  # fmt: skip
        results.append(await _hybrid(store, url, backend, utterances, iterations))
        session = await store.start_session("bench", "writes")
        counter = iter(range(10**9))

        async def write() -> Any:
            n = next(counter)
            return await store.add_utterance(
                session, "Arin", f"bench line {n} about the lantern", started_at=n, ended_at=n + 1
            )

        samples = await _time(write, iterations)
        results.append(_result(
            f"add_utterance p50 (committed, {backend})", samples,
            "one durable transaction per utterance (SQLite: WAL, synchronous=FULL), chunk "
            "folded every 5th",
        ))  # fmt: skip
        return results
    finally:
        await store.close()


class _HashEmbedder:
    """In-process stand-in for an embeddings endpoint (hashed words, 256 dimensions), so the
    hybrid figure measures our vector index and rank fusion, not a network round trip."""

    model = "bench-hash-256"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(text).tolist() for text in texts]

    @staticmethod
    def vector(text: str) -> np.ndarray:
        vector = np.zeros(256, dtype=np.float32)
        for word in text.lower().split():
            vector[hash(word) % 256] += 1.0
        return vector


async def _hybrid(
    store: MemoryStore, url: str, backend: str, utterances: int, iterations: int
) -> BenchResult:
    """search_facts with every chunk embedded: full text + cosine over all vectors, fused."""
    embedder = _HashEmbedder()
    chunks = table_of(Chunk)
    async with store._read() as conn:
        rows = (await conn.execute(select(chunks.c.id, chunks.c.text))).all()
    at = time.time() - 86400 - len(rows)  # embedded one by one during earlier play
    async with write_transaction(store._engine) as conn:
        await conn.execute(
            update(chunks)
            .where(chunks.c.id == bindparam("cid"))
            .values(
                embedding=bindparam("vec"),
                embedding_model=embedder.model,
                embedded_at=bindparam("at"),
            ),
            [
                {"cid": i, "vec": embedder.vector(text).astype("<f4").tobytes(), "at": at + n}
                for n, (i, text) in enumerate(rows)
            ],
        )
    hybrid = await MemoryStore.open(url, embeddings=embedder)
    try:
        queries = iter(range(10**9))

        async def facts() -> Any:
            return await hybrid.search_facts(_QUERIES[next(queries) % len(_QUERIES)])

        samples = await _time(facts, iterations)
    finally:
        await hybrid.close()
    return _result(
        f"search_facts hybrid p50 ({len(rows):,} embedded chunks, {backend})", samples,
        "BM25/ts_rank top 50 + cosine top 50 over 256-dim vectors, reciprocal rank fusion; "
        "in-process embedder (no network)",
    )  # fmt: skip


def _result(
    name: str, samples: list[float], method: str, goal: str | None = None, limit: float = 0.0
) -> BenchResult:
    p50 = percentile(samples, 50)
    return BenchResult(
        name=name,
        value=p50,
        unit="ms",
        method=method + "; perf_counter",
        goal=goal,
        passed=None if goal is None else p50 <= limit,
        extra={"p99_ms": percentile(samples, 99), "samples": len(samples)},
    )


async def run_bench(quick: bool = False) -> list[BenchResult]:
    with tempfile.TemporaryDirectory(prefix="glyphoxa-bench-") as folder:
        results = await _measure(
            f"sqlite+aiosqlite:///{Path(folder) / 'memory.db'}", "sqlite", quick
        )
    postgres = os.environ.get("GLYPHOXA_BENCH_POSTGRES_URL")
    if postgres:
        results += await _postgres(postgres, quick)
    return results


async def _postgres(url: str, quick: bool) -> list[BenchResult]:
    import asyncpg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    admin_dsn = base.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"glyphoxa_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        bench_url = base.set(database=name).render_as_string(hide_password=False)
        return await _measure(bench_url, "postgresql", quick)
    finally:
        admin = await asyncpg.connect(admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
