"""The ``memory`` server: search and read the campaign memory store (``campaigns.memory``).

Tools: ``search_sessions`` (transcript lines), ``query_entities`` (knowledge graph),
``get_summary`` (one entity with relations and facts), ``search_facts`` (chunks and approved facts)
and ``propose_memory`` (queue a fact about an entity for the DM's review; it joins the facts above
only once approved). When run standalone the server opens the store from the ``memory_url``
setting.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from campaigns.basics import GlyphoxaError
from tools.builtin._common import define_tool, fast, object_schema, standard
from tools.caller import current_caller
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["MAX_PROPOSED_CHARS", "MemoryAccess", "create_server"]

log = logging.getLogger(__name__)

_MAX_TEXT = 600
#: Longest fact an NPC may propose (``campaigns.memory.proposals.MAX_FACT_CHARS``; a test checks).
MAX_PROPOSED_CHARS = 300
_ENTITY_TYPES = ["player_character", "npc", "location", "faction", "item", "quest"]


def _trim(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Shorten long text fields so a search result fits an LLM turn."""
    out = []
    for row in rows:
        item = dict(row)
        for key in ("text", "summary", "description"):
            value = item.get(key)
            if isinstance(value, str) and len(value) > _MAX_TEXT:
                item[key] = value[:_MAX_TEXT] + " ..."
        out.append(item)
    return out


class MemoryAccess:
    """The store the tools use: the bot's (``ctx.memory``) or one opened from ``memory_url``."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._owned: Any = None

    async def startup(self) -> None:
        url = self._ctx.settings.memory_url
        if self._ctx.memory is None and url:
            from campaigns.memory import MemoryStore

            self._owned = await MemoryStore.open(url)
            self._ctx.memory = self._owned

    async def shutdown(self) -> None:
        if self._owned is not None:
            owned, self._owned = self._owned, None
            if self._ctx.memory is owned:
                self._ctx.memory = None
            await owned.close()

    async def call(self, method: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``method(store)``; store failures become clear tool errors."""
        store = self._ctx.memory
        if store is None:
            raise ToolError("campaign memory is not attached (no memory store configured)")
        try:
            return await method(store)
        except GlyphoxaError as error:
            raise ToolError(str(error)) from None
        except ToolError:
            raise
        except Exception as error:
            log.exception("memory store call failed")
            raise ToolError(f"campaign memory failed: {type(error).__name__}") from None


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Campaign memory search; entity lookups land in FAST, searches in STANDARD."""
    access = MemoryAccess(ctx)

    async def search_sessions(
        query: str, session_id: str | None = None, limit: int = 10
    ) -> dict[str, Any]:
        rows = await access.call(lambda s: s.search_sessions(query, session_id, limit))
        return {"query": query, "results": _trim(rows)}

    async def query_entities(name: str | None = None, type: str | None = None) -> dict[str, Any]:
        rows = await access.call(lambda s: s.query_entities(name=name, type=type))
        return {"results": _trim(rows)}

    async def get_summary(entity_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await access.call(lambda s: s.get_summary(entity_id))
        return result

    async def search_facts(query: str, top_k: int = 10) -> dict[str, Any]:
        rows = await access.call(lambda s: s.search_facts(query, top_k))
        return {"query": query, "results": _trim(rows)}

    async def propose_memory(entity: str, fact: str) -> dict[str, Any]:
        caller = current_caller()
        if caller is None:
            raise ToolError(
                "propose_memory: the call does not say which NPC proposes the fact (the Glyphoxa "
                "tool host sends it in _meta io.glyphoxa/caller)"
            )
        found: dict[str, Any] = await access.call(lambda s: s.resolve_entity(entity))
        session_id = caller.session_id or ctx.session_id
        number = await access.call(
            lambda s: s.propose_fact(caller.npc, fact, entity_id=found["id"], session_id=session_id)
        )
        proposal: dict[str, Any] = await access.call(lambda s: s.get_fact(number))
        log.info("%s proposed fact #%s about %s", caller.npc, number, found["id"])
        notes = {
            "pending": "The DM will review it; until approved it is not part of what is known.",
            "approved": "This is already a known fact.",
        }
        return {
            "proposal": number,
            "entity": {"id": found["id"], "name": found["name"]},
            "status": proposal["status"],
            "note": notes.get(proposal["status"], ""),
        }

    query_text = {"type": "string", "minLength": 1, "maxLength": 300}
    return BuiltinServer(
        name="memory",
        startup=access.startup,
        shutdown=access.shutdown,
        tools=[
            define_tool(
                "search_sessions",
                "Search what was said at the table in past (or the current) sessions.",
                object_schema(
                    {
                        "query": query_text,
                        "session_id": {"type": "string", "minLength": 1, "maxLength": 64},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                    },
                    ["query"],
                ),
                search_sessions,
                standard(estimated=700, maximum=1500, read_only=True, idempotent=True),
            ),
            define_tool(
                "query_entities",
                "Find campaign entities (NPCs, places, factions, items, quests, player "
                "characters) by name and/or type.",
                object_schema(
                    {
                        "name": {"type": "string", "minLength": 1, "maxLength": 120},
                        "type": {"type": "string", "enum": _ENTITY_TYPES},
                    }
                ),
                query_entities,
                fast(estimated=30, maximum=500, read_only=True, idempotent=True),
            ),
            define_tool(
                "get_summary",
                "Everything known about one entity: description, relations and approved facts.",
                object_schema(
                    {"entity_id": {"type": "string", "minLength": 1, "maxLength": 120}},
                    ["entity_id"],
                ),
                get_summary,
                standard(estimated=600, maximum=1500, read_only=True, idempotent=True),
            ),
            define_tool(
                "search_facts",
                "Search remembered facts and conversation chunks about the campaign.",
                object_schema(
                    {
                        "query": query_text,
                        "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
                    },
                    ["query"],
                ),
                search_facts,
                standard(estimated=900, maximum=1500, read_only=True, idempotent=True),
            ),
            define_tool(
                "propose_memory",
                "Propose a lasting fact you learned about a campaign entity (a person, place, "
                "faction, item or quest) for the campaign's memory. The DM reviews it before it "
                "becomes known. One short sentence in the third person; not for small talk.",
                object_schema(
                    {
                        "entity": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 120,
                            "description": "the entity's id or name, e.g. bartok or Bartok",
                        },
                        "fact": {
                            "type": "string",
                            "minLength": 3,
                            "maxLength": MAX_PROPOSED_CHARS,
                            "description": "the fact, e.g. Bartok owes the Black Candle 40 gold",
                        },
                    },
                    ["entity", "fact"],
                ),
                propose_memory,
                fast(estimated=40, maximum=1500),
            ),
        ],
    )
