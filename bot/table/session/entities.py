"""Speculative entity lookup: names heard in STT partials are looked up in campaign memory
before the player finishes, so the NPC's prompt has the facts (the entity's description and its
DM-approved facts) without waiting at the final."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

from bot.table.session.trace import TurnTrace
from npcs.campaign import Campaign

__all__ = ["EntityLookup"]

log = logging.getLogger(__name__)

_MAX_SNAPSHOT_CHARS = 600
_CACHE_S = 120.0


class EntityLookup:
    """Finds campaign entity names in text and fetches them (``memory.query_entities``).

    Without a memory store the campaign's ``entities.yaml`` seed answers directly.
    """

    def __init__(self, campaign: Campaign, memory: Any = None, *, wait_s: float = 0.15) -> None:
        self.memory = memory
        self.wait_s = wait_s
        self._forms: dict[str, str] = {}
        self._seeds: dict[str, dict[str, Any]] = {}
        for entity in campaign.entities.entities:
            self._seeds[entity.name] = {
                "id": entity.key,
                "name": entity.name,
                "type": entity.type,
                "description": entity.description,
            }
            for form in (entity.name, *entity.aliases):
                if len(form) >= 3:
                    self._forms[form.lower()] = entity.name
        alternatives = sorted(self._forms, key=len, reverse=True)
        self._pattern = (
            re.compile(r"\b(" + "|".join(re.escape(a) for a in alternatives) + r")\b", re.I)
            if alternatives
            else None
        )
        self._tasks: dict[str, tuple[float, asyncio.Task[list[dict[str, Any]]]]] = {}

    def names_in(self, text: str) -> list[str]:
        """Canonical entity names mentioned in ``text``, in order, without repeats."""
        if self._pattern is None or not text:
            return []
        found = (self._forms[m.group(1).lower()] for m in self._pattern.finditer(text))
        return list(dict.fromkeys(found))

    def prefetch(self, text: str) -> list[str]:
        """Start lookups for the names in ``text`` that are not cached; returns the names."""
        names = self.names_in(text)
        now = time.monotonic()
        for name in names:
            cached = self._tasks.get(name)
            if cached is not None and now - cached[0] < _CACHE_S:
                continue
            task = asyncio.create_task(self._fetch(name), name=f"entity-lookup:{name}")
            self._tasks[name] = (now, task)
        return names

    async def _fetch(self, name: str) -> list[dict[str, Any]]:
        seed = self._seeds.get(name)
        fallback = [seed] if seed else []
        if self.memory is None:
            return fallback
        try:
            rows: list[dict[str, Any]] = await self.memory.query_entities(name=name)
        except Exception as error:  # memory trouble must not cost the turn
            log.warning("entity lookup for %r failed: %s", name, error)
            return fallback
        return rows[:1] or fallback  # an unseeded store still knows entities.yaml

    async def snapshot(
        self, text: str, trace: TurnTrace | None = None, *, exclude: str | None = None
    ) -> str | None:
        """Facts about the entities in ``text`` for the prompt; waits at most ``wait_s``.
        ``exclude``: the answering NPC, whose own entry its prompt does not need (small models
        read it out: "Dwarf barkeep of the Rusty Flagon.")."""
        names = [n for n in self.names_in(text) if exclude is None or n.lower() != exclude.lower()]
        if not names:
            return None
        ready = sum(1 for n in names if n in self._tasks and self._tasks[n][1].done())
        self.prefetch(text)
        tasks = [self._tasks[n][1] for n in names]
        done, _pending = await asyncio.wait(tasks, timeout=self.wait_s)
        if trace is not None:
            trace.speculative_entities = ready
        lines: list[str] = []
        for task in tasks:
            if task not in done or task.cancelled() or task.exception() is not None:
                continue
            for row in task.result():
                description = str(row.get("description") or "").strip()
                facts = [str(fact) for fact in row.get("facts", ()) if str(fact).strip()]
                if facts:  # the DM-approved facts follow the description
                    description = " ".join(_sentence(t) for t in (description, *facts) if t)
                lines.append(f"- {row.get('name')} ({row.get('type')}): {description}")
        text_out = "\n".join(dict.fromkeys(lines))
        return text_out[:_MAX_SNAPSHOT_CHARS] or None

    def forget(self) -> None:
        """Look every name up again on its next mention (the DM approved a fact)."""
        self._tasks.clear()

    def close(self) -> None:
        for _at, task in self._tasks.values():
            task.cancel()
        self._tasks.clear()


def _sentence(text: str) -> str:
    """``text`` ending like a sentence, so a description and the facts after it read apart."""
    text = text.strip()
    return text if text[-1:] in ".!?" else f"{text}."
