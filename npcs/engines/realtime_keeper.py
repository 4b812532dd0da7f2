"""The realtime NPCs' sessions over a whole night: opened, renewed before the provider's limit,
and replaced at once when the server ends one early, each time carrying the conversation over.

The engine runs turns; this keeper owns what outlives a turn. Every NPC has one lock, taken by
its turns and by its renewals alike, so a session is never replaced during a turn (the turn
finishes first) and a turn arriving during a renewal waits for the new session instead of
being lost or sent to the old one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from campaigns.basics import GlyphoxaError, Tier
from npcs.engines.realtime_carry import CarriedTurn, Conversation, RenewalPolicy
from npcs.engines.realtime_session import RealtimeSession, ask_summary, open_session

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from campaigns.providers.usage import UsageSink

__all__ = ["SessionKeeper"]

log = logging.getLogger(__name__)


class SessionKeeper:
    """Each realtime NPC's current session and recorded conversation.

    Args:
        client: the ``openai.AsyncOpenAI`` sessions connect with.
        model: the realtime model.
        policy: when to renew and what to carry over.
    """

    def __init__(self, client: AsyncOpenAI, model: str, policy: RenewalPolicy) -> None:
        self.client = client
        self.model = model
        self.policy = policy
        self.renewals = 0
        self.meter: UsageSink | None = None
        """Where a renewal's summary reports its tokens (the engine's spend meter)."""
        """Sessions renewed so far (before the limit or after the server ended one)."""
        self._sessions: dict[str, RealtimeSession] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._conversations: dict[str, Conversation] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def lock(self, npc: str) -> asyncio.Lock:
        """The NPC's lock: held for a whole turn, and for a whole renewal."""
        return self._locks.setdefault(npc, asyncio.Lock())

    def conversation(self, npc: str) -> Conversation:
        """The NPC's recorded conversation (across all its sessions)."""
        return self._conversations.setdefault(npc, Conversation())

    def current(self, npc: str) -> RealtimeSession | None:
        """The NPC's open session, if any."""
        return self._sessions.get(npc)

    async def session(self, npc: str, instructions: str, voice: str) -> RealtimeSession:
        """The NPC's session; opened, told the conversation so far, when there is none or the
        server closed it. Call with the NPC's lock held."""
        session = self._sessions.get(npc)
        if session is not None and not session.closed:
            return session
        if session is not None:  # the server closed it just now; its renewal had no chance
            log.warning(
                "realtime session for %s was ended by the server (%s): opening a new one with "
                "the conversation so far",
                npc,
                await session.ending(),
            )
            await self.retire(npc, session)
        self.conversation(npc).fold(None, self.policy.carry_turns)
        return await self._open(npc, instructions, voice, None, [])

    async def retire(self, npc: str, session: RealtimeSession) -> None:
        """Close ``session`` and forget it (the next turn opens another)."""
        if self._sessions.get(npc) is session:
            del self._sessions[npc]
        await session.close()

    def renew_now(self, npc: str, session: RealtimeSession) -> None:
        """The server ended ``session`` during a turn: open its successor without waiting for
        the next turn (after the NPC's lock is free)."""
        self._spawn(self._renew(npc, session, early=True), f"realtime:renew:{npc}")

    def record(self, npc: str, session: RealtimeSession, *, cut: bool = False) -> None:
        """Note the turn ``session`` just took (what the players heard of a cut answer)."""
        said, session.said = session.said, None
        if said is None:
            return
        conversation = self.conversation(npc)
        conversation.scene_sent_at = max(conversation.scene_sent_at, session.scene_upto)
        answer = "".join(session.transcript).strip()
        if cut and session.heard_share is not None:
            words = answer.split()
            answer = " ".join(words[: round(len(words) * session.heard_share)])
        if cut and answer:
            answer += " (cut off)"
        conversation.record(CarriedTurn(session.context, said, answer))

    async def aclose(self) -> None:
        """Stop renewing and close every NPC's session."""
        self._closed = True
        while self._tasks:  # a renewal cut short may have started its successor's watch
            tasks, self._tasks = list(self._tasks), set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()

    # -- renewal ------------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        if self._closed:
            work.close()
            return
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _open(
        self,
        npc: str,
        instructions: str,
        voice: str,
        declared: tuple[Tier, tuple[str, ...]] | None,
        tools: list[dict[str, Any]],
    ) -> RealtimeSession:
        session = await open_session(
            self.client,
            self.model,
            npc=npc,
            instructions=instructions,
            voice=voice,
            declared=declared,
            tools=tools,
            carried=self.conversation(npc).items(),
        )
        self._sessions[npc] = session
        self._spawn(self._watch(npc, session), f"realtime:watch:{npc}")
        return session

    async def _watch(self, npc: str, session: RealtimeSession) -> None:
        """Renew ``session`` before the provider's limit, or at once when the server ends it."""
        remaining = session.opened_at + self.policy.renew_after_s - time.monotonic()
        try:
            await asyncio.wait_for(session.wait_closed(), max(0.0, remaining))
        except TimeoutError:
            await self._renew(npc, session, early=False)
            return
        if not session.retired:
            await self._renew(npc, session, early=True)

    async def _renew(self, npc: str, old: RealtimeSession, *, early: bool) -> None:
        """Replace ``old`` by a session told the conversation so far, with the same persona,
        voice and tools. Waits for the NPC's turn in progress; turns arriving meanwhile wait
        for the new session."""
        async with self.lock(npc):
            current = self._sessions.get(npc)
            if self._closed or (current is not None and current is not old):
                return  # the engine closed, or a turn already opened a new session
            minutes = f"{old.age_s() / 60:.1f} min"
            conversation = self.conversation(npc)
            summary = None
            if early or old.closed:
                log.warning(
                    "realtime session for %s was ended by the server after %s (%s): renewing "
                    "it now with the conversation so far",
                    npc,
                    minutes,
                    await old.ending(),
                )
            elif conversation.fresh:
                timeout_s = self.policy.summary_timeout_s
                summary = await ask_summary(old, npc, timeout_s, model=self.model, meter=self.meter)
            had_fresh = conversation.fresh > 0
            from_record = conversation.fold(summary, self.policy.carry_turns)
            try:
                await self._open(npc, old.instructions, old.voice, old.declared, old.tools)
            except GlyphoxaError as error:
                log.error("could not renew the realtime session for %s: %s", npc, error)
                if old.closed:
                    await self.retire(npc, old)  # the next turn opens a session
                return
            await old.close()
            self.renewals += 1
            log.info(
                "realtime session for %s renewed after %s (limit %.0f min): carried %s and %d "
                "recent turns",
                npc,
                minutes,
                self.policy.limit_s / 60,
                _summary_label(conversation.summary, from_record=from_record, fresh=had_fresh),
                len(conversation.turns),
            )


def _summary_label(summary: str, *, from_record: bool, fresh: bool) -> str:
    """What the log says the new session was told as a summary."""
    if not summary:
        return "no summary"
    if not from_record:
        return "the model's summary"
    return "a summary of its record" if fresh else "the earlier summary"
