"""``AsyncOpenAI`` clients for OpenAI and OpenAI-compatible servers, built one way everywhere.

Engines, speech-to-text and text-to-speech all talk to "an OpenAI-compatible ``base_url``";
local servers ignore the key, so a missing one becomes a placeholder rather than the SDK's
"no api_key" error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["make_openai_client", "openai_client"]

#: Sent when no key is configured: local OpenAI-compatible servers ignore it.
_NO_KEY = "not-needed"


def openai_client(
    api_key: SecretStr | str | None,
    base_url: str | None = None,
    *,
    timeout_s: float | None = None,
    max_retries: int = 1,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI``; ``timeout_s`` None keeps the SDK's default timeout."""
    import openai

    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    timeout: Any = openai.NOT_GIVEN if timeout_s is None else timeout_s
    return openai.AsyncOpenAI(
        api_key=key or _NO_KEY, base_url=base_url or None, timeout=timeout, max_retries=max_retries
    )


def make_openai_client(provider: Any, *, base_url: str | None = None) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` for a provider section of glyphoxa.yaml (``name``, ``model``,
    ``base_url``, ``api_key`` as SecretStr). ``base_url`` overrides (the local server's).

    Raises:
        GlyphoxaError: the section has neither an ``api_key`` nor a ``base_url``.
    """
    key = getattr(provider, "api_key", None)
    url = base_url or getattr(provider, "base_url", None)
    if key is None and url is None:
        raise GlyphoxaError(
            f"provider {provider.name!r} needs an api_key (write ${{OPENAI_API_KEY}}) or a base_url"
        )
    return openai_client(key, url)
