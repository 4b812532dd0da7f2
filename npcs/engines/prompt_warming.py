"""Warming a prompt-caching server (llama.cpp's ``--cache``): each NPC's stable prompt prefix when
the table opens, and a turn's prompt up to the player's words while they are still talking, so
the answer itself evaluates only the last words. Mixed into :class:`~npcs.engines.cascaded.
CascadedEngine`, which owns the requests (``_params``, ``create``) and the idle gate: the local
server answers one request at a time, so warming waits while a turn runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import openai

from campaigns.basics import GlyphoxaError, Tier
from campaigns.providers.usage import UsageSink, record_round
from npcs.context import build_messages
from npcs.engines.chat_wire import offered_tools, request_messages
from npcs.engines.events import TurnRequest

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from npcs.schema import NpcDefinition
    from tools.host import ToolHost

__all__ = ["PromptWarming"]

log = logging.getLogger(__name__)


class PromptWarming:
    """``warm_up`` and ``prefill`` for an engine that sends chat requests to one server."""

    host: ToolHost | None
    meter: UsageSink | None
    scene_chars: int
    _idle: asyncio.Event
    """Set while no turn (or prefill) is running."""
    _turns: int

    def _params(
        self,
        npc: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def create(self, *, client: Any = None, **params: Any) -> Any:
        raise NotImplementedError

    async def warm_up(
        self, npcs: Iterable[NpcDefinition], tiers: Sequence[Tier] = (Tier.STANDARD,)
    ) -> int:
        """Prefill a prompt-caching server (llama.cpp with ``--cache``) with each NPC's stable
        prompt prefix (system prompt, then the tool descriptions offered at each of ``tiers``,
        capped by its budget; by default the STANDARD tier of a first turn: other tiers' prompts
        land in the cache with their first turn), so even an NPC's first turn only evaluates
        the scene and the player's words.

        One tiny request per distinct prompt, each sent only while no turn is running (the
        local server answers one request at a time). Failures are logged and skipped.
        Returns how many prompts were warmed.
        """
        seen: set[tuple[str, tuple[str, ...]]] = set()
        warmed = 0
        for tier in tiers:
            for npc in npcs:
                tools = offered_tools(self.host, tuple(npc.tools), min(tier, npc.budget_tier))
                key = (npc.name, tuple(tool["function"]["name"] for tool in tools))
                if key in seen:
                    continue
                seen.add(key)
                await self._idle.wait()
                messages = build_messages(npc, "Player", "Hello.", has_tools=bool(tools))
                params = self._params(npc, messages, tools, None)
                params["max_tokens"] = 1
                try:
                    response = await self.create(stream=False, **params)
                except GlyphoxaError as error:
                    log.warning("warm-up of %s failed: %s", npc.name, error)
                    continue
                record_round(self.meter, getattr(response, "usage", None), params, npc.name)
                warmed += 1
        return warmed

    async def prefill(
        self,
        request: TurnRequest,
        *,
        with_tools: bool = True,
        client: AsyncOpenAI | None = None,
        model: str | None = None,
    ) -> bool:
        """Evaluate a turn's prompt up to the player's words ahead of time (``request.text``
        may be empty), so a prompt-caching server only has the words left when the turn
        comes. Skipped while a turn runs (the local server answers one request at a time);
        returns whether a request was sent. Failures are logged: it is only an optimisation.

        ``with_tools=False``, ``client`` and ``model`` prefill another prompt of the same NPC
        (the sentence cascade's opener).
        """
        if not self._idle.is_set():
            return False
        tools = offered_tools(self.host, tuple(request.npc.tools), request.tier)
        tools = tools if with_tools else []
        messages = request_messages(request, has_tools=bool(tools), scene_chars=self.scene_chars)
        params = self._params(request.npc, messages, tools, model)
        params["max_tokens"] = 1
        self._turns += 1  # the warm-up waits for it like for a turn
        self._idle.clear()
        try:
            if client is None:
                response = await self.create(stream=False, **params)
            else:
                response = await client.chat.completions.create(stream=False, **params)
            record_round(self.meter, getattr(response, "usage", None), params, request.npc.name)
        except (GlyphoxaError, openai.APIError) as error:
            log.debug("prefill for %s failed: %s", request.npc.name, error)
            return False
        finally:
            self._turns -= 1
            if not self._turns:
                self._idle.set()
        return True
