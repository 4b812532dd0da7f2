"""``DmControls``: what the DM steers while the table runs: tier overrides, mute, puppeting,
private directions, moods, reload.

The Discord cog, the DM's console, DM voice commands and rehearsal all steer through one
object (``TableSession.controls``), so a control means the same wherever it is given, and each
is told to the table as a ``DmAction``. A DM voice command (``obey``) and a console form that
gives an NPC words (``apply_text``) reach the same controls here, so a new per-NPC control is
one method of this class, one field of the NPC's seat (``bot.table.session.seats``) and its words in
each front end.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from bot.table.session.events import DmAction, TurnQueued
from bot.table.session.seats import Direction, TableSeats
from campaigns.basics import GlyphoxaError, Tier

if TYPE_CHECKING:
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.seams import EventSink, ReactionDropper, TraceMaker
    from npcs.campaign import Campaign
    from npcs.dm_voice import DmVoiceCommand
    from npcs.tier_selector import TierSelector

__all__ = ["MAX_DIRECTION_CHARS", "MAX_DIRECTION_TURNS", "MAX_MOOD_CHARS", "DmControls"]

#: The most turns one private direction may last, and the longest direction (characters).
MAX_DIRECTION_TURNS = 20
MAX_DIRECTION_CHARS = 600
#: The longest mood ("suspicious of the elves, and tired"), in characters.
MAX_MOOD_CHARS = 80
#: What the DM gives as a mood to clear it.
_NO_MOOD = frozenset({"", "clear", "none", "normal", "off", "usual"})


class DmControls:
    """The DM's controls over one table.

    Args:
        campaign: the NPCs the controls name (found by name or alias).
        tiers: the tier selector whose overrides the DM sets.
        turns: the NPC turn queues that mute and stop cut.
        seats: the NPCs at the table, whose mutes and directions the controls change.
        reactions: the pending reaction a mute or a stop drops with the answers.
        events: where each control is told (``DmAction``) and a puppeted line shown queued.
        new_trace: numbers the turns ``say`` queues.
        reload: applies NPC file edits now and says what changed (the hot-reload path).
    """

    def __init__(
        self,
        *,
        campaign: Campaign,
        tiers: TierSelector,
        turns: NpcQueues,
        seats: TableSeats,
        reactions: ReactionDropper,
        events: EventSink,
        new_trace: TraceMaker,
        reload: Callable[[], Awaitable[list[str]]],
    ) -> None:
        self._campaign = campaign
        self._tiers = tiers
        self._turns = turns
        self.seats = seats
        self._reactions = reactions
        self._events = events
        self._new_trace = new_trace
        self._reload = reload
        self._source: str | None = None

    def set_tier_override(
        self,
        tier: Tier | str | None,
        npc: str | None = None,
        duration_s: float | None = None,
        *,
        heard: str | None = None,
    ) -> None:
        """Force a tier for one NPC or all (None/``auto`` clears), optionally for a while.

        ``heard``: the DM voice command this came from (for the transcript).
        """
        name = self.npc_name(npc) if npc else None
        self._tiers.set_override(tier, npc=name, duration_s=duration_s, now=time.monotonic())
        label = tier.label if isinstance(tier, Tier) else str(tier or "auto")
        until = f" for {duration_s:g}s" if duration_s and label != "auto" else ""
        self._dm("tier", f"{label} for {name or 'all NPCs'}{until}", heard)

    def stop_speaking(self, npc: str | None = None, *, heard: str | None = None) -> None:
        """The DM's barge-in: cut what ``npc`` (or every NPC) is saying and drop queued answers;
        the words already heard stay in the scene and in memory."""
        names = self._turns.names() if npc is None else [self.npc_name(npc)]
        self._reactions.drop("the DM stopped the NPCs")
        for name in names:
            self._turns.cancel(name)
        self._dm("stop", npc or "all", heard)

    def mute(self, npc: str | None = None, *, heard: str | None = None) -> None:
        """Silence one NPC (or all): cut what it is saying and drop its queued turns."""
        if npc is None or npc.lower() == "all":
            self.seats.all_muted = True
            targets = self._turns.names()
        else:
            name = self.npc_name(npc)
            self.seats.seat(name).muted = True
            targets = [name]
        self._reactions.drop(f"the DM muted {npc or 'all'}")
        for name in targets:
            self._turns.cancel(name)
        self._dm("mute", npc or "all", heard)

    def unmute(self, npc: str | None = None, *, heard: str | None = None) -> None:
        """Let one NPC (or all) answer again."""
        if npc is None or npc.lower() == "all":
            self.seats.all_muted = False
            for seat in self.seats:
                seat.muted = False
        else:
            self.seats.seat(self.npc_name(npc)).muted = False
        self._dm("unmute", npc or "all", heard)

    def is_muted(self, npc: str) -> bool:
        """``npc`` answers nothing (muted by name, or every NPC is)."""
        return self.seats.is_muted(npc)

    def say(self, npc: str, text: str) -> None:
        """DM puppeting: ``npc`` speaks ``text`` verbatim in its voice (queued like a turn)."""
        name = self.npc_name(npc)
        if not text.strip():
            raise GlyphoxaError("nothing to say")
        npc_def = self._campaign.npcs[name]
        trace = self._new_trace(name, "DM", "", npc_def.budget_tier, "DM say")
        trace.address_reason = "DM say"
        self._turns.enqueue(name, "DM", "", npc_def.budget_tier, trace, verbatim=text)
        self._events.show(TurnQueued(trace, time.monotonic()))
        self._dm("say", f"{name}: {text}")

    def direct(
        self, npc: str, text: str, turns: int | None = 1, *, heard: str | None = None
    ) -> Direction | None:
        """Give ``npc`` a private direction for its next ``turns`` answers (None: until
        cleared), such as "be evasive about the mill" or "mention the storm": it joins those
        turns' prompts and nothing else, never the scene, a transcript, memory or a recap. A new
        direction replaces the NPC's previous one; an empty ``text`` clears it. DM ``say`` lines
        do not use up a turn. Returns the direction given (None when cleared).

        ``heard``: set when the DM spoke it (the DM's log line says so, never its words).
        """
        name = self.npc_name(npc)
        text = " ".join(text.split())
        if not text:
            self.clear_direction(name, heard=heard)
            return None
        if len(text) > MAX_DIRECTION_CHARS:
            raise GlyphoxaError(
                f"a direction is at most {MAX_DIRECTION_CHARS} characters ({len(text)} given)"
            )
        if turns is not None and not 1 <= turns <= MAX_DIRECTION_TURNS:
            raise GlyphoxaError(
                f"a direction lasts 1 to {MAX_DIRECTION_TURNS} turns (or until cleared), "
                f"not {turns}"
            )
        direction = Direction(text, turns)
        self.seats.seat(name).direction = direction
        how = " by voice" if heard else ""
        self._dm("direct", f"{name}: a private direction{how}, {direction.describe()}")
        return direction

    def clear_direction(self, npc: str, *, heard: str | None = None) -> bool:
        """Drop ``npc``'s private direction; False when it had none."""
        name = self.npc_name(npc)
        seat = self.seats.seat(name)
        if seat.direction is None:
            return False
        seat.direction = None
        self._dm("direct", f"{name}: direction cleared{' by voice' if heard else ''}")
        return True

    def set_mood(self, npc: str | None, mood: str, *, heard: str | None = None) -> str | None:
        """Set the mood of ``npc`` (None or "all": every NPC), such as "grumpy" or "suspicious
        of the elves": each of its answers is told it until the DM changes or clears it (empty,
        "clear", "none" or "normal"), and a resumed table keeps it. Returns the mood set (None:
        cleared). ``heard``: the DM voice command it came from."""
        everyone = npc is None or npc.lower() == "all"
        names = list(self._campaign.npcs) if everyone else [self.npc_name(npc or "")]
        mood = " ".join(mood.split()).strip(" .!")
        if mood.lower() in _NO_MOOD:
            mood = ""
        if len(mood) > MAX_MOOD_CHARS:
            raise GlyphoxaError(
                f"a mood is at most {MAX_MOOD_CHARS} characters ({len(mood)} given)"
            )
        for name in names:
            self.seats.seat(name).mood = mood or None
        self._dm("mood", f"{'all NPCs' if everyone else names[0]}: {mood or 'cleared'}", heard)
        return mood or None

    def take_direction(self, npc: str) -> str | None:
        """What the DM asks of the turn ``npc`` is about to answer (its mood, its direction);
        counts one of the direction's turns."""
        return self.seats.brief(npc, take=True)

    def obey(self, command: DmVoiceCommand, *, heard: str, override_minutes: float) -> None:
        """Apply a DM voice command (``npcs.dm_voice``) as the control it names; ``heard``: the
        DM's words, for the transcript (a private direction's never); a tier override lasts
        ``override_minutes``. GlyphoxaError: it names an NPC the table no longer has."""
        npc = command.npc
        if command.action == "direct" and npc is not None:
            self.direct(npc, command.direction or "", None, heard="voice")
        elif command.action == "tier":
            duration = None if command.tier is None else override_minutes * 60.0
            self.set_tier_override(command.tier, npc=npc, duration_s=duration, heard=heard)
        elif command.action == "mute":
            self.mute(npc, heard=heard)
        elif command.action == "unmute":
            self.unmute(npc, heard=heard)
        elif command.action == "stop":
            self.stop_speaking(npc, heard=heard)
        elif command.action == "mood":
            self.set_mood(npc, command.mood, heard=heard)
        else:
            raise GlyphoxaError(f"no control for the voice command {command.describe()!r}")

    def apply_text(self, action: str, npc: str, text: str) -> str:
        """A per-NPC control given as words (the console's forms post them): apply it and say
        what was done, as the DM reads it. GlyphoxaError: an unknown control or bad words."""
        if action == "say":
            self.say(npc, text)
            return f"{self.npc_name(npc)} will say it."
        if action == "mood":
            mood = self.set_mood(npc, text)
            name = self.npc_name(npc)
            return f"{name} is {mood} now." if mood else f"{name} is back to their usual self."
        raise GlyphoxaError(f"unknown control {action!r}")

    async def reload_npcs(self) -> list[str]:
        """Apply NPC file edits now (the same path as hot reload); returns change summaries."""
        summary = await self._reload()
        self._dm("reload", ", ".join(summary) or "no changes")
        return summary

    def npc_name(self, name: str) -> str:
        """The NPC ``name`` (or an alias of it) stands for; GlyphoxaError lists the known."""
        npc = self._campaign.find_npc(name)
        if npc is None:
            known = ", ".join(sorted(self._campaign.npcs)) or "none"
            raise GlyphoxaError(f"no NPC named {name!r}; known: {known}")
        return npc.name

    def bookmark(self, note: str) -> None:
        """Mark this moment of the night (the note joins the session's recap)."""
        self._dm("bookmark", note or "(no note)")

    @contextlib.contextmanager
    def acting_from(self, source: str) -> Iterator[None]:
        """Label every control used inside the block as the DM's from ``source`` (the
        console), in the transcript and the rehearsal's report."""
        previous, self._source = self._source, source
        try:
            yield
        finally:
            self._source = previous

    def _dm(self, action: str, detail: str, heard: str | None = None) -> None:
        by = None if heard else self._source
        self._events.emit(DmAction(action, detail, time.monotonic(), heard, by))
