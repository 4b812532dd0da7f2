"""Routing what players say to NPC turns: partials pick a tier and tell the lane whether its
player talks to an NPC; a judged pause may start a speculative answer; a final finds its
addressees and queues their turns, adopting the speculation when it guessed right.

A part of ``TableSession``: the session hands it each event of the players' lanes (speech
starts and ends, partials, judged pauses, finals) and each barge-in.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from bot.audio.speech import (
    Backchannel,
    FinalTranscript,
    LaneEvent,
    PartialTranscript,
    SpeechEnded,
    SpeechProgress,
    SpeechStarted,
)
from bot.audio.speech.events import TurnCheck
from bot.audio.speech.turn_end import name_alone
from bot.table.session.events import (
    BargedIn,
    PlayerPartial,
    PlayerSpoke,
    Routed,
    SpeakingChanged,
    TurnEnded,
    TurnQueued,
)
from bot.table.session.speculation import normalize
from npcs.context import SceneLine

if TYPE_CHECKING:
    from bot.audio.speech.barge_in import BargeIn
    from bot.table.session.early import EarlyAnswers
    from bot.table.session.entities import EntityLookup
    from bot.table.session.npc_queue import NpcQueues
    from bot.table.session.parts import Cast, Record
    from bot.table.session.seams import DmVoice, EventSink, NpcGate, ReactionDropper, TraceMaker
    from bot.table.session.speakers import Speaker, SpeakerLanes
    from npcs.schema import NpcDefinition

__all__ = ["Router"]

#: A partial that arrives after this much silence prefills nothing: the speaker may be done,
#: and the answer's request must not queue behind a prefill at the one-slot server.
_PREFILL_QUIET_MS = 100.0
_NAMED_AGAIN_S = 1.5
"""A name alone this soon after the line to that NPC is the end of that line ("Roll a die for
me," then a breath the turn ended on, then "Bartok."), which the NPC already answers."""
#: Verdicts that come from the words: the player is not done, so no answer is guessed yet.
_WORDS_UNFINISHED = ("ends with", "trails off", "a name alone")


class Router:
    """Player utterances -> NPC turns at one table.

    Args:
        cast: the NPCs, whom a line speaks to, how much time an answer may take, the DM's
            orders for each NPC (its seat).
        record: the scene a final joins, players' lines into campaign memory, where routing is
            told and shown, the numbering of each queued turn.
        turns: the per-NPC queues a final's turns join (and the engine that answers for an
            NPC).
        lanes: the players' lanes (who spoke, their speculation).
        entities: campaign entities looked up ahead (prefetched on partials).
        dm: who the DM is, their private words and voice commands.
        reactions: a reaction not yet heard is dropped when a player starts speaking.
        early: prefills and speculative answers (a judged pause may start the answer).
    """

    def __init__(
        self,
        *,
        cast: Cast,
        record: Record,
        turns: NpcQueues,
        lanes: SpeakerLanes,
        entities: EntityLookup,
        dm: DmVoice,
        reactions: ReactionDropper,
        early: EarlyAnswers,
    ) -> None:
        self._campaign = cast.campaign
        self._addressing = cast.addressing
        self._tiers = cast.tiers
        self._seats: NpcGate = cast.seats
        self._scene = record.scene
        self._recorder = record.recorder
        self._events: EventSink = record.events
        self._new_trace: TraceMaker = record.new_trace
        self._turns = turns
        self._lanes = lanes
        self._entities = entities
        self._dm = dm
        self._reactions = reactions
        self._early = early

    def on_lane_event(self, speaker: Speaker, event: LaneEvent) -> None:
        """One event of a player's lane, after the lane's own bookkeeping."""
        if isinstance(event, SpeechStarted):
            self._reactions.drop(f"{speaker.name} started speaking")
            self._events.show(SpeakingChanged(speaker.name, True, time.monotonic()))
        elif isinstance(event, SpeechProgress):
            self._early.talked_on(speaker, event)
        elif isinstance(event, PartialTranscript):
            self._on_partial(speaker, event)
        elif isinstance(event, TurnCheck):
            self._on_turn_check(speaker, event)
        elif isinstance(event, SpeechEnded):
            self._events.show(SpeakingChanged(speaker.name, False, time.monotonic()))
            clock = speaker.clock
            self._events.emit(
                TurnEnded(
                    speaker.name,
                    clock.wall_at(event.started_at),
                    clock.wall_at(event.stream_time),
                    event.reason,
                    event.silence_ms,
                    event.wall_time,
                )
            )
        elif isinstance(event, FinalTranscript):
            self._on_final(speaker, event)
        elif isinstance(event, Backchannel):
            speaker.drop_speculation(event.utterance_id)

    def _on_partial(self, speaker: Speaker, event: PartialTranscript) -> None:
        """Words so far: shown live (the DM's private words as nothing), a tier guessed, the
        addressed NPC's prompt prepared."""
        now = time.monotonic()
        if self._dm.private_words(speaker, event.text):  # the DM's "between us": unseen
            self._events.show(PlayerPartial(speaker.name, "", now))
            return
        self._events.show(PlayerPartial(speaker.name, event.text, now))
        mentions = self._addressing.mentions(event.text)
        # The budget that caps the tier is the one of the NPC spoken to, not one talked about.
        named = next((m for m in mentions if m.vocative), mentions[0] if mentions else None)
        npc = self._campaign.npcs.get(named.npc) if named is not None else None
        decision = self._tiers.select(event.text, npc=npc, queue_depth=self._turns.depth(), now=now)
        speaker.partial_tier = decision.tier.label
        self._entities.prefetch(event.text)
        if event.utterance_id != speaker.utterance_id:
            return
        speaker.last_partial = event.text
        addressee = self._addressee(speaker, event.text, now)
        # Whom the player talks to decides which partials go first when the CPU is busy.
        speaker.lane.addressing = bool(mentions or addressee is not None or self._dm.is_dm(speaker))
        if speaker.lane.trailing_silence_ms < _PREFILL_QUIET_MS:  # not when an answer may
            self._prefill_for(speaker, event.text, now)  # start any moment: it would wait
        spec = speaker.speculation
        if spec is not None and spec.key != normalize(event.text):
            speaker.drop_speculation()  # the player went on talking, or a late partial

    def _on_turn_check(self, speaker: Speaker, event: TurnCheck) -> None:
        """The lane judged a pause: these are the words so far; guess the answer unless the
        words themselves say the player is not done."""
        if event.utterance_id != speaker.utterance_id or not event.text:
            return
        speaker.last_partial = event.text
        spec = speaker.speculation
        if spec is not None and spec.key != normalize(event.text):
            speaker.drop_speculation()
        words_unfinished = event.reason.startswith(_WORDS_UNFINISHED)
        if self._early.speculate and speaker.speaking and not words_unfinished:
            self._speculate(speaker)

    def _on_final(self, speaker: Speaker, event: FinalTranscript) -> None:
        """The utterance is final: route it (its times in the table's clock)."""
        self._route(
            speaker,
            event.utterance_id,
            event.text,
            speech_start=speaker.clock.wall_at(event.started_at),
            speech_end=speaker.clock.wall_at(event.ended_at) or event.speech_end_wall_time,
            final_at=event.wall_time,
            stt_ms=event.stt_ms,
            turn_end=event.speech_end_wall_time,
        )

    def _route(
        self,
        speaker: Speaker,
        utterance_id: int,
        text: str,
        *,
        speech_start: float | None,
        speech_end: float | None,
        final_at: float,
        stt_ms: float | None,
        turn_end: float | None = None,
    ) -> None:
        """A player's utterance is final: record it, find the addressees, queue their turns."""
        now = time.monotonic()
        if self._dm.private_words(speaker, text):  # the DM's private direction: in no transcript
            speaker.drop_speculation()
            command = self._dm.apply(speaker, text)
            reason = f"DM voice command: {command.describe()}" if command else "not applied"
            self._events.show(PlayerPartial(speaker.name, "", now))
            self._events.emit(Routed(speaker.name, "(private)", (), reason, None, None, now))
            return
        self._events.emit(PlayerSpoke(speaker.name, text, speech_start, speech_end, now))
        self._recorder.player(speaker.name, text, speech_start or now, speech_end or now)
        command = self._dm.apply(speaker, text)
        if command is not None:  # the DM steered the table: no NPC answers this line
            reason = f"DM voice command: {command.describe()}"
            self._events.emit(Routed(speaker.name, text, (), reason, None, None, now))
            return
        self._scene.add(SceneLine(speaker.name, text, None, now))
        decision = self._addressing.detect(speaker.name, text, now, is_dm=self._dm.is_dm(speaker))
        self._entities.prefetch(text)
        known, muted = self._campaign.npcs, self._seats.is_muted
        names = [n for n in decision.npcs if n in known and not muted(n)]
        unheard, speaker.unheard = speaker.unheard, None
        if self._named_again(speaker, text, names, speech_start):
            if unheard is None or unheard[0] != names[0]:
                reason = f"{names[0]} named again right after the line to them: part of that line"
                self._events.emit(Routed(speaker.name, text, (), reason, None, None, now))
                return
            text = _joined(unheard[1], text)  # its answer was cut before a word: answer it whole
        speaker.last_line = (speech_end or now, tuple(names))
        tier_label = tier_reason = None
        spec = speaker.speculation
        if spec is not None and spec.utterance_id == utterance_id:
            speaker.speculation = None
        else:
            spec = None
        for name in names:
            npc = self._campaign.npcs[name]
            tier = self._tiers.select(text, npc=npc, queue_depth=self._turns.depth(), now=now)
            self._tiers.commit(tier, npc=name, now=now)
            puppet = decision.puppet_text is not None
            direction = None if puppet else self._seats.brief(name, take=True)
            adopted = None
            if (
                spec is not None
                and spec.brief == direction
                and spec.npc == name
                and spec.tier == tier.tier
                and spec.key == normalize(text)
                and not puppet
            ):
                adopted, spec = spec, None
                adopted.adopt()
            tier_label, tier_reason = tier.tier.label, tier.reason
            trace = self._new_trace(name, speaker.name, text, tier.tier, tier.reason)
            trace.address_reason = decision.reason
            trace.speech_end = speech_end
            trace.turn_end = turn_end
            trace.final_transcript = final_at
            trace.stt_compute_ms = round(stt_ms, 2) if stt_ms is not None else None
            trace.speculative = adopted is not None
            self._turns.enqueue(
                name,
                speaker.name,
                text,
                tier.tier,
                trace,
                verbatim=decision.puppet_text,
                snapshot=partial(self._entities.snapshot, text, trace, exclude=name)
                if text
                else None,
                speculation=adopted,
                direction=direction,
            )
            self._events.show(TurnQueued(trace, now))
        if spec is not None:
            spec.cancel()  # the final said something else
        reason = decision.reason if names or not decision.npcs else "muted"
        routed = Routed(speaker.name, text, tuple(names), reason, tier_label, tier_reason, now)
        self._events.emit(routed)

    def on_barge_in(self, barge: BargeIn) -> None:
        """A player cut an NPC off: stop its turn. When it was the answer to their own line and
        not a word of it was heard ("Roll a die for me," ended on its breath, then "Bartok."
        over the answer), that line may be answered again (see ``_route``)."""
        turn = self._turns.current(barge.npc)
        speaker = self._lanes.get(barge.speaker)
        if turn is not None and speaker is not None and turn.speaker == speaker.name:
            answered = turn.verbatim is None and turn.reacting_to is None  # their line
            if not barge.heard.played_text.strip() and answered:
                speaker.unheard = (barge.npc, turn.text)
        self._turns.interrupt(barge.npc)
        who = speaker.name if speaker else barge.speaker
        self._events.emit(BargedIn(who, barge.npc, barge.heard.played_text, time.monotonic()))

    def _named_again(
        self, speaker: Speaker, text: str, names: list[str], speech_start: float | None
    ) -> bool:
        last = speaker.last_line
        if last is None or len(names) != 1 or speech_start is None:
            return False
        ended, answered = last
        if names[0] not in answered or speech_start - ended > _NAMED_AGAIN_S:
            return False
        return name_alone(text, self._campaign.npcs[names[0]].names())

    def _addressee(self, speaker: Speaker, text: str, now: float) -> NpcDefinition | None:
        """The one NPC who would answer ``text`` if the player stopped here (named, or the
        conversation they are in); None when unclear, several, muted or a DM line."""
        if self._dm.is_dm(speaker):
            return None
        decision = self._addressing.detect(speaker.name, text, now, record=False)
        if len(decision.npcs) != 1 or self._seats.is_muted(decision.npcs[0]):
            return None
        return self._campaign.npcs.get(decision.npcs[0])

    def _prefill_for(self, speaker: Speaker, text: str, now: float) -> None:
        """A partial shows who the player talks to: evaluate that NPC's prompt meanwhile."""
        if not self._early.prefilling or self._turns.busy():
            return  # a running answer must not wait behind a prefill
        npc = self._addressee(speaker, text, now)
        if npc is not None:
            tier = self._tiers.select(text, npc=npc, queue_depth=self._turns.depth(), now=now)
            self._early.prefill(npc, speaker.name, tier.tier, text)

    def _speculate(self, speaker: Speaker) -> None:
        """The player paused: start the addressed NPC's answer on the latest partial."""
        text = speaker.last_partial
        if not text or speaker.speculation is not None:
            return
        npc = self._addressee(speaker, text, time.monotonic())
        if npc is None:
            return
        name = npc.name
        if self._turns.npc_busy(name) or self._seats.has_direction(name):
            return  # answers keep their order; a directed answer waits for its final
        engine = self._turns.engine_for(npc)
        if engine is None:
            return
        now = time.monotonic()
        tier = self._tiers.select(text, npc=npc, queue_depth=self._turns.depth(), now=now)
        brief = self._seats.brief(name, take=False)
        self._early.guess(speaker, npc, engine, tier.tier, text, brief)


def _joined(line: str, name: str) -> str:
    """A line and the name said after its breath, as one line: "Roll a die for me, Bartok."."""
    tail = name.strip().rstrip(",;")
    end = "" if tail.endswith((".", "!", "?")) else "."
    return f"{line.strip().rstrip('.!?,;')}, {tail}{end}"
