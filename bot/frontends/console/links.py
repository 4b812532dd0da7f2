"""Who may open the console: one-time login links for the DM and revocable read-only links.

A login link carries ``<expiry>.<nonce>.<signature>``: an HMAC-SHA256 over the expiry and the
nonce with a key made fresh by each bot process. The bot mints links for ``/console``; the CLI
(``glyphoxa console link``) mints them too, with the key the running bot wrote to its link file
(readable by this OS user only, so only someone who could read the bot's config and tokens
can). No request to the bot is needed, and a restart invalidates every link and session. Each
link works once (the bot remembers its nonce until it expires).

A read-only link is a random token the DM makes in the console and can revoke; a browser that
opened it sees the live table and nothing else, until the link is revoked.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError

__all__ = [
    "LinkFile",
    "LinkKey",
    "ShareLinks",
    "mint_token",
    "read_link_file",
    "remove_link_file",
    "write_link_file",
]

log = logging.getLogger(__name__)


def mint_token(key: bytes, minutes: float, *, now: float | None = None) -> str:
    """A login token valid for ``minutes``: ``<expiry>.<nonce>.<signature>``."""
    expiry = int((now if now is not None else time.time()) + minutes * 60)
    nonce = secrets.token_urlsafe(18)
    return f"{expiry}.{nonce}.{_sign(key, expiry, nonce)}"


def _sign(key: bytes, expiry: int, nonce: str) -> str:
    digest = hmac.new(key, f"{expiry}.{nonce}".encode(), hashlib.sha256).digest()
    return digest.hex()


@dataclass(slots=True)
class LinkKey:
    """This process's login-link key and the nonces already redeemed."""

    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _used: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:  # the key never reaches a log
        return f"LinkKey(used={len(self._used)})"

    def mint(self, minutes: float) -> str:
        return mint_token(self.key, minutes)

    def redeem(self, token: str, *, now: float | None = None) -> bool:
        """True once for a well-signed, unexpired token; False for anything else."""
        now = now if now is not None else time.time()
        parts = token.split(".")
        if len(parts) != 3 or not token.isascii() or not parts[0].isdigit() or len(parts[0]) > 12:
            return False  # compare_digest takes ASCII only; an expiry is a Unix time
        expiry, nonce, signature = int(parts[0]), parts[1], parts[2]
        if not hmac.compare_digest(_sign(self.key, expiry, nonce), signature):
            return False
        if expiry < now or nonce in self._used:
            return False
        self._used = {n: e for n, e in self._used.items() if e >= now}
        self._used[nonce] = expiry
        return True


@dataclass(slots=True)
class ShareLinks:
    """Read-only links: a token per link, stored only as its SHA-256."""

    _links: dict[str, float] = field(default_factory=dict)
    """Hash of the token -> when it was made."""

    def create(self) -> str:
        token = secrets.token_urlsafe(24)
        self._links[_digest(token)] = time.time()
        return token

    def revoke_all(self) -> int:
        count = len(self._links)
        self._links.clear()
        return count

    def valid(self, token: str | None) -> str | None:
        """The link's id (its hash) when ``token`` is a live read-only link."""
        if not token:
            return None
        digest = _digest(token)
        return digest if digest in self._links else None

    def alive(self, link_id: str | None) -> bool:
        return link_id is not None and link_id in self._links

    def __len__(self) -> int:
        return len(self._links)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class LinkFile:
    """What a running bot tells ``glyphoxa console link``."""

    url: str
    key: bytes
    pid: int
    link_minutes: float

    def __repr__(self) -> str:
        return f"LinkFile(url={self.url!r}, pid={self.pid})"

    def login_url(self) -> str:
        return f"{self.url}/login/{mint_token(self.key, self.link_minutes)}"


def write_link_file(path: Path, url: str, key: LinkKey, link_minutes: float) -> None:
    """Write the link file readable and writable by this user only (0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "url": url,
        "key": key.key.hex(),
        "pid": os.getpid(),
        "link_minutes": link_minutes,
    }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(temporary, path)


def remove_link_file(path: Path) -> None:
    """Remove the link file if it is still this process's."""
    with contextlib.suppress(OSError, ValueError, GlyphoxaError):
        if read_link_file(path, check_alive=False).pid == os.getpid():
            path.unlink()


def read_link_file(path: Path, *, check_alive: bool = True) -> LinkFile:
    """The running bot's console, from its link file.

    Raises:
        GlyphoxaError: no file, a file another user could read, or its bot is not running.
    """
    try:
        info = path.stat()
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GlyphoxaError(
            f"{path}: no running Glyphoxa console found (console.link_file); start the bot with "
            "glyphoxa run (console.enabled: true) or glyphoxa rehearse --console, from the "
            "same folder and config"
        ) from None
    except (OSError, ValueError) as error:
        raise GlyphoxaError(f"{path}: cannot read the console link file: {error}") from None
    if info.st_mode & 0o077:
        raise GlyphoxaError(
            f"{path}: other users can read this file, so its key is not secret; remove it and "
            "restart the bot (it writes the file with mode 0600)"
        )
    try:
        found = LinkFile(
            url=str(raw["url"]),
            key=bytes.fromhex(str(raw["key"])),
            pid=int(raw["pid"]),
            link_minutes=float(raw.get("link_minutes", 10.0)),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise GlyphoxaError(f"{path}: not a console link file ({error})") from None
    if check_alive and not _running(found.pid):
        raise GlyphoxaError(
            f"{path}: the bot that wrote it (pid {found.pid}) is not running; start it again"
        )
    return found


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
