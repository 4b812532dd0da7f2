"""Exposed tool names: provider-safe, decided by configuration, fixed for the session.

Names are handed out in configuration order (built-ins first, then MCP servers as listed),
with ``expose_as`` first of all, so the earlier server keeps a shared name and the later tool
becomes ``<server>_<tool>``. Servers that are down take part with the tools they offered last
time (``known_tools``), so who is up never changes who gets a name. Once a name has pointed at
a tool it keeps pointing there for the whole session: a name is never moved to another server,
even when an earlier server that was never seen before comes up later (its tool is renamed
instead, and that collision is reported once).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["MAX_NAME_LENGTH", "NameCollision", "NameLedger", "Offer", "safe_name"]

log = logging.getLogger(__name__)

#: Longest tool name providers accept (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``).
MAX_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_name(name: str) -> str:
    """``name`` made provider-safe: other characters become ``_``; an over-long name is cut and
    given a short hash so two long names sharing a prefix stay distinct."""
    cleaned = _UNSAFE.sub("_", name) or "tool"
    if len(cleaned) <= MAX_NAME_LENGTH:
        return cleaned
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME_LENGTH - 9]}_{digest}"


@dataclass(frozen=True, slots=True)
class NameCollision:
    """Two tools wanted one name; ``renamed`` is what the later one is exposed as."""

    name: str
    kept: str
    moved: str
    renamed: str

    def describe(self) -> str:
        return (
            f"{self.moved} wanted {self.name!r} (taken by {self.kept}); exposed as {self.renamed!r}"
        )


@dataclass(frozen=True, slots=True)
class Offer:
    """One tool a server offers (or offered last time, while it is down)."""

    server: str
    original: str
    expose_as: str | None = None


Owner = tuple[str, str]


class NameLedger:
    """Assigns names and remembers them for the session (one ledger per host)."""

    def __init__(self) -> None:
        self._pinned: dict[str, Owner] = {}
        self._by_owner: dict[Owner, str] = {}
        self._reported: set[NameCollision] = set()
        self.collisions: list[NameCollision] = []
        """Every collision of the session so far, in the order they happened."""

    def assign(self, offers: Sequence[Offer]) -> dict[Owner, str]:
        """Exposed name of every offer; new collisions are logged once."""
        names: dict[Owner, str] = {}
        taken: dict[str, Owner] = {}
        for offer in offers:  # pinned names stay where they are
            owner = (offer.server, offer.original)
            pinned = self._by_owner.get(owner)
            if pinned is not None:
                names[owner], taken[pinned] = pinned, owner
        for offer in offers:  # then explicit names, in config order
            owner = (offer.server, offer.original)
            if owner in names or offer.expose_as is None:
                continue
            name = safe_name(offer.expose_as)
            if name != offer.expose_as:
                log.warning(
                    "expose_as %r of %s is not provider-safe; using %r",
                    offer.expose_as,
                    offer.server,
                    name,
                )
            if self._free(name, owner, taken):
                names[owner], taken[name] = name, owner
        for offer in offers:  # then the tools' own names, in config order
            owner = (offer.server, offer.original)
            if owner in names:
                continue
            wanted = safe_name(offer.expose_as or offer.original)
            name = wanted
            if not self._free(name, owner, taken):
                name = self._fallback(offer, owner, taken)
                kept = taken.get(wanted) or self._pinned[wanted]
                self._report(NameCollision(wanted, "/".join(kept), "/".join(owner), name))
            names[owner], taken[name] = name, owner
        for owner, name in names.items():
            self._pinned.setdefault(name, owner)
            self._by_owner.setdefault(owner, name)
        return names

    def pinned(self, name: str) -> Owner | None:
        """Which (server, tool) ``name`` has pointed at this session, if any."""
        return self._pinned.get(name)

    def _free(self, name: str, owner: Owner, taken: Mapping[str, Owner]) -> bool:
        holder = taken.get(name) or self._pinned.get(name)
        return holder is None or holder == owner

    def _fallback(self, offer: Offer, owner: Owner, taken: Mapping[str, Owner]) -> str:
        base = safe_name(f"{offer.server}_{offer.original}")
        name, suffix = base, 2
        while not self._free(name, owner, taken):
            name = safe_name(f"{offer.server}_{offer.original}_{suffix}")
            suffix += 1
        return name

    def _report(self, collision: NameCollision) -> None:
        if collision in self._reported:
            return
        self._reported.add(collision)
        self.collisions.append(collision)
        log.warning("tool name collision: %s", collision.describe())
