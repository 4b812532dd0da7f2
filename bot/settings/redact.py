"""Secrets kept out of pages and logs, by value as well as by type.

``SecretStr`` fields (tokens, API keys) hide themselves, but a secret also reaches the config
in fields that are not typed as secrets: a password inside ``memory.url``
(``postgresql://glyphoxa:${PGPASSWORD}@db/glyphoxa``, the form glyphoxa.yaml recommends), an
MCP server's ``env`` entries, a key in a query string or on a command line. So the settings
page shows the config as it was written (each ``${VAR}`` as the reference, never its value),
and everything it or a log line shows passes :func:`redact_text`, which removes every value
that came from the environment, every password in a URL and every value of a secret-looking
query parameter or flag. :func:`remember_secrets` (called by ``load_config``) teaches the log
filter the values of the config the process runs with.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, SecretStr

__all__ = [
    "MASK",
    "RedactingFilter",
    "forget_secrets",
    "redact_text",
    "remember_secrets",
    "secret_values",
    "shown_config",
]

MASK = "**********"
_MIN_SECRET = 4
"""Shorter environment values (``1``, ``en``) are not secrets and would mask every word."""
_SECRET_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|apikey|auth(orization)?|credential|"
    r"private[_-]?key|session|cookie|signature|sig|key)$",
    re.IGNORECASE,
)
_SECRET_DICTS = frozenset({"env", "headers", "header", "environment", "cookies"})
"""Dicts whose every value is a secret (an MCP server's ``env``, HTTP headers)."""
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<pw>[^@\s/]+)@")
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&;#\s\"']+)", re.IGNORECASE
)
_FLAG_SECRET = re.compile(
    r"(?P<head>--?(?P<name>[A-Za-z0-9_-]+)[= ])(?P<value>[^\s\"']+)", re.IGNORECASE
)
_BEARER = re.compile(r"(?P<head>\b(Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})")

_lock = threading.Lock()
_remembered: frozenset[str] = frozenset()


def remember_secrets(values: Iterable[str]) -> None:
    """Add secret values every log line and page is cleaned of (the config's, at load)."""
    global _remembered
    fresh = {v for v in values if isinstance(v, str) and len(v.strip()) >= _MIN_SECRET}
    with _lock:
        _remembered = frozenset(_remembered | fresh)


def forget_secrets() -> None:
    """Forget every remembered value (tests)."""
    global _remembered
    with _lock:
        _remembered = frozenset()


def secret_values(config: BaseModel, env_values: Iterable[str] = ()) -> set[str]:
    """Every secret value of ``config``: each ``SecretStr``, each value from the environment,
    each password in a URL and each value of a secret dict (``env``, ``headers``)."""
    found = {v for v in env_values if len(v.strip()) >= _MIN_SECRET}

    def walk(value: Any, key: str, secret_dict: bool) -> None:
        if isinstance(value, SecretStr):
            found.add(value.get_secret_value())
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                walk(getattr(value, name), name, False)
        elif isinstance(value, dict):
            inner = key.lower() in _SECRET_DICTS
            for name, item in value.items():
                walk(item, str(name), inner)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item, key, secret_dict)
        elif isinstance(value, str):
            if secret_dict or _SECRET_NAME.search(key):
                found.add(value)
            for match in _URL_PASSWORD.finditer(value):
                found.add(match.group("pw"))

    walk(config, "", False)
    return {v for v in found if len(v.strip()) >= _MIN_SECRET}


def redact_text(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` without any remembered (or ``extra``) secret value, URL password, secret
    query parameter, secret flag value or bearer token."""
    values = sorted(_remembered | {v for v in extra if len(v.strip()) >= _MIN_SECRET}, key=len)
    for value in reversed(values):  # longest first: a secret holding another goes whole
        if value in text:
            text = text.replace(value, MASK)
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", text)
    text = _QUERY_SECRET.sub(_masked_if_secret, text)
    text = _FLAG_SECRET.sub(_masked_if_secret, text)
    return _BEARER.sub(lambda m: m.group("head") + MASK, text)


def _masked_if_secret(match: re.Match[str]) -> str:
    if _SECRET_NAME.search(match.group("name").replace("-", "_")):
        return match.group("head") + MASK
    return match.group(0)


def shown_config(
    config: BaseModel, templates: dict[tuple[str | int, ...], str] | None = None
) -> dict[str, Any]:
    """The config as a page may show it: JSON values, each field that came from ``${VAR}``
    shown as written (the reference, not its value), every other secret masked."""
    dump: dict[str, Any] = config.model_dump(mode="json")  # SecretStr -> '**********'
    for path, template in (templates or {}).items():
        _set_at(dump, path, template)
    secrets = secret_values(config)
    return _clean(dump, "", False, secrets)  # type: ignore[no-any-return]


def _set_at(dump: Any, path: tuple[str | int, ...], value: str) -> None:
    node = dump
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return
    try:
        if isinstance(node, dict) and path[-1] in node:
            node[path[-1]] = value
        elif isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
            node[path[-1]] = value
    except (IndexError, TypeError):
        return


def _clean(value: Any, key: str, secret_dict: bool, secrets: set[str]) -> Any:
    if isinstance(value, dict):
        inner = key.lower() in _SECRET_DICTS
        return {k: _clean(v, str(k), inner, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(item, key, secret_dict, secrets) for item in value]
    if isinstance(value, str):
        if "${" in value:  # as written: references only, but a literal part may hold a secret
            return _URL_PASSWORD.sub(_keep_reference, value)
        if value and (secret_dict or _SECRET_NAME.search(key)):
            return MASK
        return redact_text(value, secrets)
    return value


def _keep_reference(match: re.Match[str]) -> str:
    password = match.group("pw")
    kept = password if password.startswith("${") and password.endswith("}") else MASK
    return match.group("head") + kept + "@"


class RedactingFilter(logging.Filter):
    """A handler filter: the record's message (and traceback) without secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is logging's to report, not ours
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True
