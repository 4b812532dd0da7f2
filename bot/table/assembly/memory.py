"""Opening the campaign memory the way the bot does, for writing or only for reading.

The bot, ``glyphoxa doctor`` and the ``memory`` commands open the configured database the same
way (:func:`open_memory`). Commands that only read (``memory search``, ``recap``, ``tools
list``, ``npc show``, ...) use :func:`memory_url_for_reading`: a SQLite file that does not exist
yet is not created by looking at it; they read an empty in-memory database seeded from the
campaign's ``entities.yaml`` instead, which is what the first session will start from. An
existing database is read as it is (``seed=False``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig
    from campaigns.memory import MemoryStore

__all__ = [
    "IN_MEMORY_URL",
    "REHEARSAL_MEMORY",
    "database_url",
    "memory_url_for_reading",
    "open_memory",
    "sqlite_file",
]

log = logging.getLogger(__name__)

IN_MEMORY_URL = "sqlite+aiosqlite://"
"""A private SQLite database that lives as long as its store and touches no file."""

REHEARSAL_MEMORY = Path("out") / "memory.db"
"""Where ``glyphoxa rehearse`` keeps a scene's memory by default (``--out out``)."""


def database_url(value: str) -> str:
    """A database URL from what a DM typed: a URL as it is, a plain path (``out/memory.db``)
    as the SQLite file it names."""
    if "://" in value:
        return value
    return f"sqlite+aiosqlite:///{Path(value).expanduser()}"


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite`` URL points at; None for other databases and in-memory SQLite."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # MemoryStore.open names the bad URL with its fix
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def memory_url_for_reading(url: str) -> tuple[str, Path | None]:
    """The URL a read-only command opens, and the SQLite file it stands in for when that file
    does not exist yet (None when the configured database is used)."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        return IN_MEMORY_URL, path
    return url, None


async def open_memory(
    config: GlyphoxaConfig, *, url: str | None = None, summarize: bool = True, seed: bool = True
) -> MemoryStore:
    """Open the configured memory and seed an empty knowledge graph from ``entities.yaml``.

    Embeddings come from ``providers.embeddings``; session summaries use ``providers.llm`` when
    it is an OpenAI-compatible endpoint (``name: openai`` or a ``base_url``); the bundled local
    model needs its server running, so pass an ``LlmSummarizer`` to ``MemoryStore.open``
    yourself in that case. The table session uses this too, so the bot and the CLI see the
    same database the same way.

    Args:
        config: The loaded glyphoxa.yaml.
        url: A database URL instead of ``memory.url``.
        summarize: Attach the LLM summarizer (off for commands that write no summaries).
        seed: Seed an empty knowledge graph (off when only reading an existing database).
    """
    from campaigns.content import EntitiesFile
    from campaigns.memory import LlmSummarizer, MemoryStore, OpenAIEmbeddings
    from campaigns.providers.openai_client import openai_client
    from campaigns.yamlio import load_model

    embeddings = None
    provider = config.providers.embeddings
    if provider is not None:
        embeddings = OpenAIEmbeddings(
            openai_client(provider.api_key, provider.base_url, timeout_s=10.0, max_retries=1),
            model=provider.model or "text-embedding-3-small",
            owns_client=True,
        )
    summarizer = None
    llm = config.providers.llm
    if summarize and (llm.name == "openai" or llm.base_url):
        summarizer = LlmSummarizer(
            openai_client(llm.api_key, llm.base_url, timeout_s=60.0, max_retries=1),
            llm.model or "gpt-4o-mini",
            owns_client=True,
        )
    try:
        store = await MemoryStore.open(
            url or config.memory.url,
            embeddings=embeddings,
            summarizer=summarizer,
            chunk_utterances=config.memory.chunk_utterances,
            close_helpers=True,
        )
    except BaseException:
        for helper in (embeddings, summarizer):
            if helper is not None:
                await helper.aclose()
        raise
    try:
        entities_file = Path(config.campaign.path) / "entities.yaml"
        if seed and entities_file.is_file() and not await store.query_entities():
            entities = load_model(entities_file, EntitiesFile, allow_empty=True).unwrap()
            count, relations = await store.seed_entities(entities)
            log.info("seeded %d entities and %d relations from %s", count, relations, entities_file)
        elif seed and await store.index_entities():
            log.info("entity descriptions indexed for search_facts")
    except BaseException:
        await store.close()
        raise
    return store
