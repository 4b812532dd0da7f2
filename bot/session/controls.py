"""What the DM steers while the table runs: tier overrides, mute, puppeting, private directions,
reload, status.

A mixin of ``TableSession`` (the Discord cog and the rehearsal call these on the session).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.session.events import DmAction, TurnQueued
from campaigns.basics import GlyphoxaError, Tier

if TYPE_CHECKING:
    from bot.session.events import LiveEvent, SessionEvent
    from bot.session.npc_queue import NpcQueues
    from bot.session.recorder import TranscriptRecorder
    from bot.session.speakers import SpeakerLanes
    from bot.session.trace import TurnTrace
    from bot.speech import Mixer
    from npcs.campaign import Campaign, CampaignWatcher
    from npcs.tier_selector import TierSelector

__all__ = ["Direction", "DmControls"]

#: The most turns one private direction may last, and the longest direction (characters).
MAX_DIRECTION_TURNS = 20
MAX_DIRECTION_CHARS = 600


@dataclass(slots=True)
class Direction:
    """A private direction for an NPC's next ``turns_left`` answers, or (None) for every answer
    until the DM clears it (``DmControls.direct``)."""

    text: str
    turns_left: int | None

    def describe(self) -> str:
        """How long it lasts, as the DM reads it: "3 turns", "1 turn", "until cleared"."""
        if self.turns_left is None:
            return "until cleared"
        return f"{self.turns_left} turn{'s' if self.turns_left != 1 else ''}"


class DmControls:
    """DM controls over the session state declared below (provided by ``TableSession``)."""

    campaign: Campaign
    tiers: TierSelector
    turns: NpcQueues
    mixer: Mixer
    recorder: TranscriptRecorder
    traces: list[TurnTrace]
    muted: set[str]
    all_muted: bool
    directions: dict[str, Direction]
    _watcher: CampaignWatcher | None
    lanes: SpeakerLanes

    if TYPE_CHECKING:  # provided by TableSession

        def queue_depth(self) -> int: ...
        def _new_trace(
            self, npc: str, speaker: str, text: str, tier: Tier, reason: str
        ) -> TurnTrace: ...
        def _npcs_changed(self) -> None: ...
        def _emit(self, event: SessionEvent) -> None: ...
        def _show(self, event: LiveEvent) -> None: ...
        def _drop_reaction(self, why: str) -> None: ...

    # --- DM controls -------------------------------------------------------------------------
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
        name = self._npc_name(npc) if npc else None
        self.tiers.set_override(tier, npc=name, duration_s=duration_s, now=time.monotonic())
        label = tier.label if isinstance(tier, Tier) else str(tier or "auto")
        until = f" for {duration_s:g}s" if duration_s and label != "auto" else ""
        self._dm("tier", f"{label} for {name or 'all NPCs'}{until}", heard)

    def stop_speaking(self, npc: str | None = None, *, heard: str | None = None) -> None:
        """The DM's barge-in: cut what ``npc`` (or every NPC) is saying and drop queued answers;
        the words already heard stay in the scene and in memory."""
        names = self.turns.names() if npc is None else [self._npc_name(npc)]
        self._drop_reaction("the DM stopped the NPCs")
        for name in names:
            self.turns.cancel(name)
        self._dm("stop", npc or "all", heard)

    def mute(self, npc: str | None = None, *, heard: str | None = None) -> None:
        """Silence one NPC (or all): cut what it is saying and drop its queued turns."""
        if npc is None or npc.lower() == "all":
            self.all_muted = True
            targets = self.turns.names()
        else:
            name = self._npc_name(npc)
            self.muted.add(name)
            targets = [name]
        self._drop_reaction(f"the DM muted {npc or 'all'}")
        for name in targets:
            self.turns.cancel(name)
        self._dm("mute", npc or "all", heard)

    def unmute(self, npc: str | None = None, *, heard: str | None = None) -> None:
        if npc is None or npc.lower() == "all":
            self.all_muted = False
            self.muted.clear()
        else:
            self.muted.discard(self._npc_name(npc))
        self._dm("unmute", npc or "all", heard)

    def is_muted(self, npc: str) -> bool:
        return self.all_muted or npc in self.muted

    def say(self, npc: str, text: str) -> None:
        """DM puppeting: ``npc`` speaks ``text`` verbatim in its voice (queued like a turn)."""
        name = self._npc_name(npc)
        if not text.strip():
            raise GlyphoxaError("nothing to say")
        npc_def = self.campaign.npcs[name]
        trace = self._new_trace(name, "DM", "", npc_def.budget_tier, "DM say")
        trace.address_reason = "DM say"
        self.turns.enqueue(name, "DM", "", npc_def.budget_tier, trace, verbatim=text)
        self._show(TurnQueued(trace, time.monotonic()))
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
        name = self._npc_name(npc)
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
        self.directions[name] = direction
        how = " by voice" if heard else ""
        self._dm("direct", f"{name}: a private direction{how}, {direction.describe()}")
        return direction

    def clear_direction(self, npc: str, *, heard: str | None = None) -> bool:
        """Drop ``npc``'s private direction; False when it had none."""
        name = self._npc_name(npc)
        if self.directions.pop(name, None) is None:
            return False
        self._dm("direct", f"{name}: direction cleared{' by voice' if heard else ''}")
        return True

    def take_direction(self, npc: str) -> str | None:
        """The direction for the turn ``npc`` is about to answer; counts one of its turns."""
        direction = self.directions.get(npc)
        if direction is None:
            return None
        if direction.turns_left is not None:
            direction.turns_left -= 1
            if direction.turns_left <= 0:
                del self.directions[npc]
        return direction.text

    async def reload_npcs(self) -> list[str]:
        """Apply NPC file edits now (the same path as hot reload); returns change summaries."""
        watcher = self._watcher
        if watcher is None:
            raise GlyphoxaError("the session is not started")
        changes = await watcher.poll_once()
        changes += await watcher.poll_once()  # a change counts once it was stable for one poll
        self._npcs_changed()
        summary = [f"{c.kind} {c.name or c.path.name}" for c in changes]
        self._dm("reload", ", ".join(summary) or "no changes")
        return summary

    def status(self) -> dict[str, Any]:
        """A snapshot for the DM: NPCs, speakers, overrides, recent latency."""
        now = time.monotonic()
        holder = self.mixer.current
        last_turns = {trace.npc: trace for trace in self.traces if trace.heard}
        npcs = {}
        for name, npc in self.campaign.npcs.items():
            override = self.tiers.override_for(name, now)
            last = last_turns.get(name)
            npcs[name] = {
                "muted": self.is_muted(name),
                "speaking": holder is not None and holder.npc == name and self.mixer.npc_speaking,
                "thinking": self.turns.current(name) is not None,
                "queued": self.turns.queued(name),
                "override": override[1] if override else None,
                "engine": npc.engine.value,
                "budget_tier": npc.budget_tier.label,
                "last_tier": last.tier if last else None,
                "last_tier_reason": last.tier_reason if last else None,
                "direction": (
                    self.directions[name].describe() if name in self.directions else None
                ),
                "direction_turns": (
                    self.directions[name].turns_left or 0 if name in self.directions else 0
                ),
            }
        recent = [t.stages_ms()["voice_to_voice"] for t in self.traces[-20:]]
        v2v = [ms for ms in recent if ms is not None]
        return {
            "campaign": self.campaign.name,
            "session_id": self.recorder.session_id,
            "npcs": npcs,
            "speakers": {
                s.name: {
                    "speaking": s.speaking,
                    "partial_tier": s.partial_tier,
                    "display_name": s.display_name,
                }
                for s in self.lanes
            },
            "turns": len(self.traces),
            "queue_depth": self.queue_depth(),
            "recent_voice_to_voice_ms": v2v,
        }

    def _npc_name(self, name: str) -> str:
        npc = self.campaign.find_npc(name)
        if npc is None:
            known = ", ".join(sorted(self.campaign.npcs)) or "none"
            raise GlyphoxaError(f"no NPC named {name!r}; known: {known}")
        return npc.name

    def _dm(self, action: str, detail: str, heard: str | None = None) -> None:
        self._emit(DmAction(action, detail, time.monotonic(), heard))
