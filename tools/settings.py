"""Typed settings of the built-in tools: what each tool may read, built once from the config.

A built-in tool reads its own frozen settings object (``ctx.settings.web.search_url``), never a
string key with a default of its own. Values and defaults live in one place, the ``tools:``
section of glyphoxa.yaml (``tools.config.BuiltinToolsConfig``), where a value no tool could use
is refused with its file and line; :meth:`BuiltinSettings.from_config` is the one translation.

A built-in served on its own (``python -m tools.builtin NAME``, ``glyphoxa serve-tool NAME``)
receives values as text across the process boundary: ``--set KEY=VALUE`` and, for the module
entry, ``GLYPHOXA_<KEY>`` environment variables. :func:`override` reads that text back through the
same model, so it is checked exactly as glyphoxa.yaml is, before any tool starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_origin

from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:  # the CLI imports the tool names without loading pydantic's models
    from pydantic import SecretStr

    from tools.config import BuiltinToolsConfig

__all__ = [
    "MEMORY_URL_KEY",
    "BuiltinSettings",
    "ImageSettings",
    "RulesSettings",
    "WebSettings",
    "environ_values",
    "override",
    "set_option_values",
]

#: The one text key besides the ``tools:`` fields: the memory database comes from ``memory.url``.
MEMORY_URL_KEY = "memory_url"
#: Where the images server looks for a key when ``tools.image_api_key`` is empty.
OPENAI_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True, slots=True)
class RulesSettings:
    """What ``search_rules`` and ``get_rule`` read."""

    srd_path: Path | None
    """The SRD 5.1 folder to index; None: the imported index, else the summary alone."""
    db_path: Path
    """The rules index file (``glyphoxa rules import`` writes it)."""
    cache: bool
    """False: an index built from the SRD is not saved (commands that only look)."""


@dataclass(frozen=True, slots=True)
class WebSettings:
    """What ``web_search`` and ``fetch_page`` read."""

    backend: Literal["searxng", "brave"]
    search_url: str | None
    """SearXNG's URL; for Brave, None means Brave's own endpoint."""
    api_key: SecretStr | None
    """Brave's key (masked in every repr)."""
    allow_hosts: tuple[str, ...]
    """Lower-case host names ``fetch_page`` may reach although they resolve to private addresses."""


@dataclass(frozen=True, slots=True)
class ImageSettings:
    """What ``generate_image`` reads."""

    base_url: str | None
    """An OpenAI-compatible images endpoint; None: OpenAI's."""
    api_key: SecretStr | None
    """``tools.image_api_key``, else ``OPENAI_API_KEY``; None: image generation is unavailable."""
    model: str
    size: str
    output_dir: Path


@dataclass(frozen=True, slots=True)
class BuiltinSettings:
    """Every built-in tool's settings, as ``ToolContext.settings`` carries them."""

    rules: RulesSettings
    web: WebSettings
    images: ImageSettings
    memory_url: str | None = field(repr=False)
    """The database the memory and session servers open when the bot hands them no store (kept
    out of the repr: a PostgreSQL URL may hold a password)."""

    @classmethod
    def from_config(
        cls,
        config: BuiltinToolsConfig,
        *,
        memory_url: str | None = None,
        rules_cache: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> BuiltinSettings:
        """The tools' settings from the ``tools:`` section of glyphoxa.yaml.

        Args:
            config: The ``tools:`` section, already validated.
            memory_url: ``memory.url``, for servers that open the store themselves.
            rules_cache: False for commands that only look (the SRD index is not saved).
            environ: Where ``OPENAI_API_KEY`` is looked up (``os.environ`` when None).
        """
        from pydantic import SecretStr

        env = os.environ if environ is None else environ
        image_key = config.image_api_key
        if image_key is None and env.get(OPENAI_KEY_ENV):
            image_key = SecretStr(env[OPENAI_KEY_ENV])
        return cls(
            rules=RulesSettings(
                srd_path=Path(config.srd_path) if config.srd_path else None,
                db_path=Path(config.rules_db),
                cache=rules_cache,
            ),
            web=WebSettings(
                backend=config.web_search_backend,
                search_url=config.web_search_url,
                api_key=config.web_search_api_key,
                allow_hosts=tuple(config.fetch_allow_hosts),
            ),
            images=ImageSettings(
                base_url=config.image_base_url,
                api_key=image_key,
                model=config.image_model,
                size=config.image_size,
                output_dir=Path(config.image_output_dir),
            ),
            memory_url=memory_url or None,
        )

    @classmethod
    def defaults(cls) -> BuiltinSettings:
        """The settings of an empty ``tools:`` section (a ``ToolContext()`` in tests and tools)."""
        from tools.config import BuiltinToolsConfig

        return cls.from_config(BuiltinToolsConfig())


def environ_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings ``GLYPHOXA_<KEY>`` environment variables give (``GLYPHOXA_SRD_PATH``, ...)."""
    from tools.config import BuiltinToolsConfig

    keys = [*BuiltinToolsConfig.model_fields, MEMORY_URL_KEY]
    return {key: environ[f"GLYPHOXA_{key.upper()}"] for key in keys
            if environ.get(f"GLYPHOXA_{key.upper()}")}  # fmt: skip


def set_option_values(pairs: Iterable[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` options as text values for :func:`override` (a later one wins)."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise GlyphoxaError(f"--set expects KEY=VALUE, got {pair!r}")
        values[key.strip()] = value.strip()
    return values


def override(
    config: BuiltinToolsConfig,
    values: Mapping[str, str],
    *,
    memory_url: str | None = None,
    origin: Callable[[str], str] = lambda key: key,
) -> tuple[BuiltinToolsConfig, str | None]:
    """``config`` and ``memory_url`` with text values laid over them, validated as glyphoxa.yaml.

    A list setting (``fetch_allow_hosts``) is written comma-separated; an empty value clears an
    optional one. An unknown key or a bad value raises a GlyphoxaError that names where it came
    from (``origin(key)``, e.g. ``--set image_size``) and what is wrong.
    """
    from pydantic import ValidationError

    from tools.config import BuiltinToolsConfig

    fields = BuiltinToolsConfig.model_fields
    update: dict[str, Any] = {}
    for key, text in values.items():
        if key == MEMORY_URL_KEY:
            memory_url = text or None
        elif key not in fields:
            known = ", ".join(sorted([*fields, MEMORY_URL_KEY]))
            raise GlyphoxaError(f"{origin(key)}: unknown tool setting {key!r}; choose from {known}")
        elif get_origin(fields[key].annotation) is list:
            update[key] = [item.strip() for item in text.split(",") if item.strip()]
        elif not text and fields[key].default is None:
            update[key] = None
        else:
            update[key] = text
    try:
        merged = BuiltinToolsConfig.model_validate({**config.model_dump(), **update})
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            loc = problem["loc"]
            where = origin(str(loc[0])) if loc else "tools"
            if len(loc) > 1 and isinstance(loc[1], int):  # which item of a comma-separated list
                where += f" (item {loc[1] + 1})"
            message = str(problem["msg"]).removeprefix("Value error, ")
            problems.append(f"{where}: {message}")
        raise GlyphoxaError("; ".join(problems)) from None
    return merged, memory_url
