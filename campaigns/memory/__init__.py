"""Campaign memory: transcripts, semantic recall, knowledge graph, summaries, tool tables.

``store = await MemoryStore.open("sqlite+aiosqlite:///memory.db")`` (or a
``postgresql+asyncpg://`` URL); see ``campaigns.memory.store`` for the API.
"""

from __future__ import annotations

from campaigns.memory.embeddings import Embedder, OpenAIEmbeddings
from campaigns.memory.store import MemoryStore
from campaigns.memory.summaries import ExtractiveSummarizer, LlmSummarizer, Summarizer

__all__ = [
    "Embedder",
    "ExtractiveSummarizer",
    "LlmSummarizer",
    "MemoryStore",
    "OpenAIEmbeddings",
    "Summarizer",
]
