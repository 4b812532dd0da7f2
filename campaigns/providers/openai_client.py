"""``AsyncOpenAI`` clients for OpenAI and OpenAI-compatible servers, built one way everywhere.

Engines, speech-to-text, text-to-speech, memory's embeddings and the image tool all talk to "an
OpenAI-compatible ``base_url``"; it lives in the lowest layer so each of them can build one.
Local servers ignore the key, so a missing one becomes a placeholder rather than the SDK's
"no api_key" error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["openai_client"]

#: Sent when no key is configured: local OpenAI-compatible servers ignore it.
_NO_KEY = "not-needed"


def openai_client(
    api_key: SecretStr | str | None,
    base_url: str | None = None,
    *,
    timeout_s: float | Any | None = None,
    max_retries: int = 1,
    http_client: Any = None,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI``; ``timeout_s`` None keeps the SDK's default timeout (a float, or an
    ``httpx`` timeout); ``http_client`` is a pooled one (``npcs.inference.pools``)."""
    import openai

    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    timeout: Any = openai.NOT_GIVEN if timeout_s is None else timeout_s
    extra: dict[str, Any] = {} if http_client is None else {"http_client": http_client}
    return openai.AsyncOpenAI(
        api_key=key or _NO_KEY,
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
        **extra,
    )
