"""Load ``glyphoxa.yaml``: safe YAML, ``${VAR}`` expansion, located errors, secrets kept secret.

Environment variables:
- ``${VAR}`` is replaced by the variable's value; if ``VAR`` is not set, loading fails with an
  error naming the key (``discord.token: environment variable DISCORD_TOKEN is not set``).
- ``${VAR:-default}`` uses ``default`` when ``VAR`` is unset or empty; ``${VAR-default}`` only
  when unset. ``$${`` is a literal ``${``.
- A value that is exactly one reference and expands to the empty string becomes ``null``, so
  ``token: ${DISCORD_TOKEN:-}`` means "optional": offline commands (``check``, ``rehearse``)
  work without it and ``glyphoxa run`` calls :func:`require_discord_token`, which fails with a
  clear message. This is how the shipped ``glyphoxa.yaml`` writes every secret.

Every error cites ``file:line:column`` and all errors are reported at once. Expanded values
(which may be secrets) are never echoed in a message.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.settings.config import GlyphoxaConfig
from bot.settings.redact import remember_secrets, secret_values
from campaigns.basics import GlyphoxaError
from campaigns.yamlio import Issue, Loaded, YamlDocument, load_model

__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_NAME",
    "EnvFound",
    "check_config",
    "env_templates",
    "expand_env",
    "load_config",
    "require_discord_token",
    "resolve_config_path",
]

log = logging.getLogger(__name__)

CONFIG_ENV_VAR = "GLYPHOXA_CONFIG"
DEFAULT_CONFIG_NAME = "glyphoxa.yaml"

_REFERENCE = re.compile(
    r"\$\$\{|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\}|\$\{"
)


def resolve_config_path(path: str | Path | None = None) -> Path | None:
    """The config file to read: ``path``, else ``$GLYPHOXA_CONFIG``, else ``./glyphoxa.yaml``.

    Returns None when no file was asked for and ``./glyphoxa.yaml`` does not exist (defaults).
    An explicitly named file that does not exist is an error.
    """
    if path is None:
        env_path = os.environ.get(CONFIG_ENV_VAR)
        if env_path:
            path = env_path
        else:
            default = Path(DEFAULT_CONFIG_NAME)
            return default if default.is_file() else None
    resolved = Path(path)
    if not resolved.is_file():
        raise GlyphoxaError(f"{resolved}: config file not found")
    return resolved


def check_config(
    path: str | Path | None = None, *, environ: Mapping[str, str] | None = None
) -> Loaded[GlyphoxaConfig]:
    """Load the config and return it with every issue found (never raises for content problems).

    With no file (see :func:`resolve_config_path`) the defaults are returned. A valid config
    knows which of its values came from the environment (:func:`env_templates`), so pages and
    logs can hide them.
    """
    resolved = resolve_config_path(path)
    if resolved is None:
        return Loaded(Path(DEFAULT_CONFIG_NAME), GlyphoxaConfig(), None, [])
    env = os.environ if environ is None else environ
    found = EnvFound()
    loaded = load_model(
        resolved,
        GlyphoxaConfig,
        allow_empty=True,
        transform=lambda doc: expand_env(doc, env, found=found),
    )
    if loaded.value is not None:
        loaded.value._env_templates = dict(found.templates)
        remember_secrets(secret_values(loaded.value, found.values))
    return loaded


def env_templates(config: GlyphoxaConfig) -> dict[tuple[str | int, ...], str]:
    """Where ``config`` took a value from the environment: key path -> the text as written
    (``postgresql://glyphoxa:${PGPASSWORD}@db/glyphoxa``)."""
    return dict(config._env_templates)


@dataclass(slots=True)
class EnvFound:
    """What ``${VAR}`` expansion took from the environment: each value, and where."""

    templates: dict[tuple[str | int, ...], str] = field(default_factory=dict)
    values: set[str] = field(default_factory=set)


def load_config(
    path: str | Path | None = None, *, environ: Mapping[str, str] | None = None
) -> GlyphoxaConfig:
    """Load and validate ``glyphoxa.yaml``; raise ContentError listing every problem.

    ``path`` None means ``$GLYPHOXA_CONFIG`` or ``./glyphoxa.yaml``, or the defaults when
    neither exists. ``environ`` replaces ``os.environ`` for ``${VAR}`` expansion (tests).
    """
    loaded = check_config(path, environ=environ)
    config = loaded.unwrap()
    log.debug("loaded config from %s", loaded.path)
    return config


def require_discord_token(config: GlyphoxaConfig) -> str:
    """The bot token, or a GlyphoxaError saying how to provide it (for ``glyphoxa run``)."""
    token = config.discord.token
    if token is None or not token.get_secret_value().strip():
        raise GlyphoxaError(
            "discord.token is empty: set the DISCORD_TOKEN environment variable "
            "(glyphoxa.yaml reads it as ${DISCORD_TOKEN:-})"
        )
    return token.get_secret_value()


def expand_env(
    doc: YamlDocument, environ: Mapping[str, str], *, found: EnvFound | None = None
) -> list[Issue]:
    """Replace ``${VAR}`` references in every string value of ``doc.data``, in place;
    ``found`` collects what came from the environment."""
    issues: list[Issue] = []
    doc.data = _expand(doc, doc.data, (), environ, issues, found or EnvFound())
    return issues


def _expand(
    doc: YamlDocument,
    value: Any,
    loc: tuple[str | int, ...],
    environ: Mapping[str, str],
    issues: list[Issue],
    found: EnvFound,
) -> Any:
    if isinstance(value, dict):
        return {k: _expand(doc, v, (*loc, k), environ, issues, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(doc, v, (*loc, i), environ, issues, found) for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        return _expand_string(doc, value, loc, environ, issues, found)
    return value


def _expand_string(
    doc: YamlDocument,
    text: str,
    loc: tuple[str | int, ...],
    environ: Mapping[str, str],
    issues: list[Issue],
    found: EnvFound,
) -> str | None:
    key = _dotted(loc)
    problems: list[str] = []
    from_env = False

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        name = match.group("name")
        if name is None:
            problems.append(
                f"{key}: malformed variable reference; write ${{NAME}} or ${{NAME:-default}}"
            )
            return ""
        nonlocal from_env
        current = environ.get(name)
        op = match.group("op")
        if op == ":-" and not current:
            return str(match.group("default"))
        if op == "-" and current is None:
            return str(match.group("default"))
        if current is None:
            problems.append(
                f"{key}: environment variable {name} is not set "
                f"(export it, or write ${{{name}:-default}} to make it optional)"
            )
            return ""
        from_env = True
        found.values.add(current)
        return current

    whole = _REFERENCE.fullmatch(text) is not None and not text.startswith("$${")
    expanded = _REFERENCE.sub(replace, text)
    for problem in problems:
        issues.append(doc.issue(loc, problem))
    if from_env:
        found.templates[loc] = text
    if whole and expanded == "":
        return None
    return expanded


def _dotted(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<root>"
