"""Reactions: an NPC named in another NPC's answer may add one short line after it.

Opt-in per campaign (``reactions: mentioned`` in campaign.yaml). When an answer to a player is
written, its words go through the same address detection as a player's line: the first other
NPC present in the scene that the answer speaks to (else the first it names) reacts, if it is
free, unmuted and has an engine. The reaction is a short turn (FAST tier, at most two
sentences) whose prompt says what it reacts to and who said it. It is queued right behind the
answer, so it thinks while the answer plays and takes the floor after it.

A table keeps its players first: one reaction per player turn and never a reaction to a
reaction (no chains); a reaction never starts while a player speaks (one who starts before it
is heard drops it); once it plays, a player's speech cuts it like any barge-in; and a reaction
to an answer that was cut off is dropped with it. A dropped reaction gives back the turn of the
DM's private direction it took.

A part of ``TableSession``: what follows an answer asks it for a reaction (``react_to``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.table.session.events import TurnQueued
from campaigns.basics import Tier

if TYPE_CHECKING:
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.seams import EventSink, NpcGate, TraceMaker
    from bot.table.session.speakers import SpeakerLanes
    from bot.table.session.turns import NpcTurn
    from npcs.addressing import AddressDetector, NameMention
    from npcs.campaign import Campaign
    from npcs.engines import Engine
    from npcs.schema import NpcDefinition

__all__ = ["REACTION_SENTENCES", "Reactions"]

log = logging.getLogger(__name__)

REACTION_SENTENCES = 2
"""A reaction says at most this many sentences ("Ha! Bartok, you old liar.")."""
_REMEMBERED = 64
"""Player turns remembered as already reacted to (a turn's answers arrive within seconds)."""


@dataclass(slots=True)
class _Pending:
    """A reaction queued and not yet heard, and the answer it reacts to."""

    reaction: NpcTurn
    answer: NpcTurn


class Reactions:
    """Queues and drops the reactions of one table (a ``seams.ReactionDropper``).

    Args:
        campaign: the NPCs (``reactions:`` in campaign.yaml turns them on).
        addressing: finds whom an answer speaks to or names, and who is in the scene.
        turns: the queues a reaction joins right behind the answer.
        lanes: the players' lanes (a reaction never starts while one speaks).
        engines: the engine that would voice the reaction (None: that NPC cannot react).
        seats: the NPCs at the table: the DM's mutes and directions (a muted NPC does not react).
        events: where a queued reaction is shown.
        new_trace: numbers the reaction's turn.
    """

    def __init__(
        self,
        *,
        campaign: Campaign,
        addressing: AddressDetector,
        turns: NpcQueues,
        lanes: SpeakerLanes,
        engines: Callable[[NpcDefinition], Engine | None],
        seats: NpcGate,
        events: EventSink,
        new_trace: TraceMaker,
    ) -> None:
        self._campaign = campaign
        self._addressing = addressing
        self._turns = turns
        self._lanes = lanes
        self._engines = engines
        self._seats = seats
        self._events = events
        self._new_trace = new_trace
        self._pending: _Pending | None = None
        self._reacted: deque[tuple[str, float]] = deque(maxlen=_REMEMBERED)

    @property
    def enabled(self) -> bool:
        """The campaign lets NPCs react to answers that name them (campaign.yaml is read when
        the session starts)."""
        return self._campaign.meta.reactions == "mentioned"

    def react_to(self, answer: NpcTurn) -> bool:
        """``answer`` is written and still playing: queue a reaction to it if one is due.
        True when one was queued."""
        trace = answer.trace
        if (
            not self.enabled
            or answer.reacting_to is not None  # a reaction never gets one: no chains
            or answer.verbatim is not None  # the DM's puppeting is not an answer
            or trace.final_transcript is None  # nor anything but an answer to a player's line
            or trace.error is not None
        ):
            return False
        player_turn = (answer.speaker, trace.final_transcript)
        if player_turn in self._reacted or self._pending is not None:
            return False
        if self._lanes.listening:  # a player is talking: a reaction would start over them
            return False
        words = answer.handle.full_text or trace.reply
        found = self._reactor(answer.npc, words)
        if found is None:
            return False
        npc, mention = found
        self._reacted.append(player_turn)
        reaction = self._new_trace(
            npc.name, answer.speaker, words, Tier.FAST, f"reaction to {answer.npc}"
        )
        role = "spoken to" if mention.vocative else "named"
        reaction.address_reason = f"{role} in {answer.npc}'s answer ('{mention.matched}')"
        reaction.reaction_to = answer.npc
        turn = self._turns.enqueue(
            npc.name,
            answer.speaker,
            words,
            Tier.FAST,
            reaction,
            reacting_to=answer.npc,
            max_sentences=REACTION_SENTENCES,
            direction=self._seats.brief(npc.name, take=True),  # the DM's direction holds too
        )
        self._pending = _Pending(turn, answer)
        self._events.show(TurnQueued(reaction, time.monotonic()))  # the DM's console
        log.info("%s reacts to %s's answer (%s)", npc.name, answer.npc, reaction.address_reason)
        return True

    def _reactor(self, answerer: str, words: str) -> tuple[NpcDefinition, NameMention] | None:
        """The NPC that reacts to ``answerer``'s ``words``: spoken to before named, in the
        order heard; present in the scene, free, unmuted and with an engine."""
        present = set(self._addressing.active)
        mentions = [
            mention
            for mention in self._addressing.mentions(words)
            if mention.npc != answerer and mention.npc in present
        ]
        mentions.sort(key=lambda mention: not mention.vocative)  # stable: keeps the order heard
        for mention in mentions:
            npc = self._campaign.npcs.get(mention.npc)
            if npc is None or self._seats.is_muted(npc.name) or self._turns.npc_busy(npc.name):
                continue
            if self._engines(npc) is not None:
                return npc, mention
        return None

    def answer_ended(self, turn: NpcTurn) -> None:
        """An NPC turn ended: a reaction to an answer that was cut off goes with it."""
        pending = self._pending
        if pending is None:
            return
        if turn is pending.reaction:
            self._pending = None
        elif turn is pending.answer and (turn.trace.interrupted or turn.trace.error):
            self.drop(f"{turn.npc}'s answer was cut off")

    def drop(self, why: str) -> None:
        """Drop the pending reaction unless players already hear it (then only a barge-in
        stops it, as any NPC)."""
        pending = self._pending
        if pending is None:
            return
        reaction = pending.reaction
        if reaction.handle.playback_started_at is None and not reaction.handle.done():
            reaction.trace.dropped = why
            self._turns.drop(reaction)
            if reaction.direction is not None:  # unheard: the DM's direction keeps its turn
                self._seats.give_back(reaction.npc)
            log.info("%s's reaction to %s dropped: %s", reaction.npc, pending.answer.npc, why)
        self._pending = None
