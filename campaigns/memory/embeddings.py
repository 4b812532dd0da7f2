"""Embeddings through any OpenAI-compatible ``/v1/embeddings`` endpoint (optional).

The store works without embeddings (full-text only); with an ``Embedder`` it embeds each chunk in
the background and ``search_facts`` becomes hybrid.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from campaigns.memory.usage_records import UsageReport

__all__ = ["Embedder", "OpenAIEmbeddings"]

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    model: str

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


class OpenAIEmbeddings:
    """``Embedder`` over the ``openai`` SDK; ``base_url`` points it at any compatible server."""

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str = "text-embedding-3-small",
        owns_client: bool = False,
    ) -> None:
        """``client`` comes from ``campaigns.providers.openai_client`` (built by whoever opens the
        store); ``owns_client``: ``aclose`` closes it."""
        self.model = model
        self._owns_client = owns_client
        self._client = client
        self.on_usage: UsageReport | None = None
        """Told each request's tokens (the table's spend meter)."""

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIEmbeddings(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        response = await self._client.embeddings.create(model=self.model, input=texts)
        if self.on_usage is not None:
            reported = getattr(response, "usage", None)
            if reported is not None and reported.prompt_tokens is not None:
                self.on_usage(reported.prompt_tokens, 0, False)
            else:  # a server that reports no usage: about four characters a token
                self.on_usage(sum(len(text) for text in texts) // 4, 0, True)
        ordered = sorted(response.data, key=lambda item: item.index)
        if len(ordered) != len(texts):
            raise ValueError(
                f"embeddings endpoint returned {len(ordered)} vectors for {len(texts)}"
            )
        return [list(item.embedding) for item in ordered]

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
