"""Routing what players say to NPC turns: partials pick a tier and tell the lane whether its
player talks to an NPC; a judged pause may start a speculative answer; a final finds its
addressees and queues their turns, adopting the speculation when it guessed right.

A part of ``TableSession`` (as ``DmControls`` is): it reads the session state declared below.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from bot.session.events import BargedIn, PlayerPartial, PlayerSpoke, Routed, TurnQueued
from bot.session.speculation import Speculation, normalize
from bot.speech.turn_end import name_alone
from npcs.context import SceneLine, SceneWindow

if TYPE_CHECKING:
    import asyncio
    from typing import Any

    from bot.session.entities import EntityLookup
    from bot.session.events import LiveEvent, SessionEvent
    from bot.session.npc_queue import NpcQueues
    from bot.session.prefill import Prefiller
    from bot.session.recorder import TranscriptRecorder
    from bot.session.speakers import Speaker, SpeakerLanes
    from bot.session.timing import TimedTts
    from bot.session.trace import TurnTrace
    from bot.speech import FinalTranscript, PartialTranscript
    from bot.speech.barge_in import BargeIn
    from bot.speech.events import TurnCheck
    from bot.speech.scheduler import CpuScheduler
    from campaigns.basics import Tier
    from npcs.addressing import AddressDetector
    from npcs.campaign import Campaign
    from npcs.dm_voice import DmVoiceCommand
    from npcs.engines import Engine
    from npcs.schema import NpcDefinition
    from npcs.tier_selector import TierSelector

__all__ = ["Routing"]

#: A partial that arrives after this much silence prefills nothing: the speaker may be done,
#: and the answer's request must not queue behind a prefill at the one-slot server.
_PREFILL_QUIET_MS = 100.0
_NAMED_AGAIN_S = 1.5
"""A name alone this soon after the line to that NPC is the end of that line ("Roll a die for
me," then a breath the turn ended on, then "Bartok."), which the NPC already answers."""
#: Verdicts that come from the words: the player is not done, so no answer is guessed yet.
_WORDS_UNFINISHED = ("ends with", "trails off", "a name alone")


class Routing:
    """Player utterances -> NPC turns, over the session state declared below."""

    campaign: Campaign
    addressing: AddressDetector
    tiers: TierSelector
    entities: EntityLookup
    turns: NpcQueues
    prefiller: Prefiller
    recorder: TranscriptRecorder
    scene: list[SceneLine]
    scene_window: SceneWindow
    lanes: SpeakerLanes
    scheduler: CpuScheduler
    speculate: bool
    _may_speculate: Callable[[NpcDefinition, Tier], bool] | None
    _engines: Callable[[NpcDefinition], Engine | None]
    _tts: TimedTts
    _tasks: set[asyncio.Task[Any]]
    directions: dict[str, Any]

    if TYPE_CHECKING:  # provided by TableSession, DmControls and VoiceCommands

        def is_muted(self, npc: str) -> bool: ...
        def take_direction(self, npc: str) -> str | None: ...
        def is_dm(self, speaker: Speaker) -> bool: ...
        def private_words(self, speaker: Speaker, text: str) -> bool: ...
        def _voice_command(self, speaker: Speaker, text: str) -> DmVoiceCommand | None: ...
        def queue_depth(self) -> int: ...
        def _new_trace(
            self, npc: str, speaker: str, text: str, tier: Tier, reason: str
        ) -> TurnTrace: ...
        def _add_scene(self, line: SceneLine) -> None: ...
        def _emit(self, event: SessionEvent) -> None: ...
        def _show(self, event: LiveEvent) -> None: ...

    def scene_for(self, speaker: str) -> list[SceneLine]:
        """The scene as ``speaker`` had heard it when their current line began: other players'
        lines that came while they talked are left out (the next turn has them). Their prompt
        is evaluated while they talk; at a full table, a line of table talk landing meanwhile
        moved everything after it, and the turn evaluated those tokens again."""
        began = next(
            (s.clock.wall_at(s.onset) for s in self.lanes if s.name == speaker),
            None,
        )
        if began is None:
            return self.scene_window.shown(self.scene)
        return self.scene_window.shown(
            [
                line
                for line in self.scene
                if line.npc is not None or line.speaker == speaker or line.at <= began
            ]
        )

    def _on_partial(self, speaker: Speaker, event: PartialTranscript) -> None:
        now = time.monotonic()
        mentions = self.addressing.mentions(event.text)
        # The budget that caps the tier is the one of the NPC spoken to, not one talked about.
        named = next((m for m in mentions if m.vocative), mentions[0] if mentions else None)
        npc = self.campaign.npcs.get(named.npc) if named is not None else None
        decision = self.tiers.select(event.text, npc=npc, queue_depth=self.queue_depth(), now=now)
        speaker.partial_tier = decision.tier.label
        self.entities.prefetch(event.text)
        if event.utterance_id != speaker.utterance_id:
            return
        speaker.last_partial = event.text
        addressee = self._addressee(speaker, event.text, now)
        # Whom the player talks to decides which partials go first when the CPU is busy.
        speaker.lane.addressing = bool(mentions or addressee is not None or self.is_dm(speaker))
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
        if self.speculate and speaker.speaking and not event.reason.startswith(_WORDS_UNFINISHED):
            self._speculate(speaker)

    def _on_final(self, speaker: Speaker, event: FinalTranscript) -> None:
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
        if self.private_words(speaker, text):  # the DM's private direction: in no transcript
            speaker.drop_speculation()
            command = self._voice_command(speaker, text)
            reason = f"DM voice command: {command.describe()}" if command else "not applied"
            self._show(PlayerPartial(speaker.name, "", now))
            self._emit(Routed(speaker.name, "(private)", (), reason, None, None, now))
            return
        self._emit(PlayerSpoke(speaker.name, text, speech_start, speech_end, now))
        self.recorder.player(speaker.name, text, speech_start or now, speech_end or now)
        command = self._voice_command(speaker, text)
        if command is not None:  # the DM steered the table: no NPC answers this line
            reason = f"DM voice command: {command.describe()}"
            self._emit(Routed(speaker.name, text, (), reason, None, None, now))
            return
        self._add_scene(SceneLine(speaker.name, text, None, now))
        decision = self.addressing.detect(speaker.name, text, now, is_dm=self.is_dm(speaker))
        self.entities.prefetch(text)
        names = [n for n in decision.npcs if n in self.campaign.npcs and not self.is_muted(n)]
        unheard, speaker.unheard = speaker.unheard, None
        if self._named_again(speaker, text, names, speech_start):
            if unheard is None or unheard[0] != names[0]:
                reason = f"{names[0]} named again right after the line to them: part of that line"
                self._emit(Routed(speaker.name, text, (), reason, None, None, now))
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
            npc = self.campaign.npcs[name]
            tier = self.tiers.select(text, npc=npc, queue_depth=self.queue_depth(), now=now)
            self.tiers.commit(tier, npc=name, now=now)
            direction = self.take_direction(name) if decision.puppet_text is None else None
            adopted = None
            if (
                direction is None
                and spec is not None
                and spec.npc == name
                and spec.tier == tier.tier
                and spec.key == normalize(text)
                and decision.puppet_text is None
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
            self.turns.enqueue(
                name,
                speaker.name,
                text,
                tier.tier,
                trace,
                verbatim=decision.puppet_text,
                snapshot=partial(self.entities.snapshot, text, trace) if text else None,
                speculation=adopted,
                direction=direction,
            )
            self._show(TurnQueued(trace, now))
        if spec is not None:
            spec.cancel()  # the final said something else
        reason = decision.reason if names or not decision.npcs else "muted"
        self._emit(Routed(speaker.name, text, tuple(names), reason, tier_label, tier_reason, now))

    def _on_barge_in(self, barge: BargeIn) -> None:
        """A player cut an NPC off: stop its turn. When it was the answer to their own line and
        not a word of it was heard ("Roll a die for me," ended on its breath, then "Bartok."
        over the answer), that line may be answered again (see ``_route``)."""
        turn = self.turns.current(barge.npc)
        speaker = self.lanes.get(barge.speaker)
        if turn is not None and speaker is not None and turn.speaker == speaker.name:
            answered = turn.verbatim is None and turn.reacting_to is None  # their line
            if not barge.heard.played_text.strip() and answered:
                speaker.unheard = (barge.npc, turn.text)
        self.turns.interrupt(barge.npc)
        who = speaker.name if speaker else barge.speaker
        self._emit(BargedIn(who, barge.npc, barge.heard.played_text, time.monotonic()))

    def _named_again(
        self, speaker: Speaker, text: str, names: list[str], speech_start: float | None
    ) -> bool:
        last = speaker.last_line
        if last is None or len(names) != 1 or speech_start is None:
            return False
        ended, answered = last
        if names[0] not in answered or speech_start - ended > _NAMED_AGAIN_S:
            return False
        return name_alone(text, self.campaign.npcs[names[0]].names())

    def _addressee(self, speaker: Speaker, text: str, now: float) -> NpcDefinition | None:
        """The one NPC who would answer ``text`` if the player stopped here (named, or the
        conversation they are in); None when unclear, several, muted or a DM line."""
        if self.is_dm(speaker):
            return None
        decision = self.addressing.detect(speaker.name, text, now, record=False)
        if len(decision.npcs) != 1 or self.is_muted(decision.npcs[0]):
            return None
        return self.campaign.npcs.get(decision.npcs[0])

    def _prefill_for(self, speaker: Speaker, text: str, now: float) -> None:
        """A partial shows who the player talks to: evaluate that NPC's prompt meanwhile."""
        if not self.prefiller.enabled or self.turns.busy():
            return  # a running answer must not wait behind a prefill
        npc = self._addressee(speaker, text, now)
        if npc is not None:
            tier = self.tiers.select(text, npc=npc, queue_depth=self.queue_depth(), now=now)
            snapshot = partial(self.entities.snapshot, text)
            scene = self.scene_for(speaker.name)
            self.prefiller.ahead(npc, speaker.name, tier.tier, scene, text, snapshot)

    def _speculate(self, speaker: Speaker) -> None:
        """The player paused: start the addressed NPC's answer on the latest partial."""
        text = speaker.last_partial
        if not text or speaker.speculation is not None:
            return
        npc = self._addressee(speaker, text, time.monotonic())
        if npc is None:
            return
        name = npc.name
        if self.turns.npc_busy(name) or name in self.directions:
            return  # answers keep their order; a directed answer waits for its final
        engine = self._engines(npc)
        if engine is None:
            return
        now = time.monotonic()
        tier = self.tiers.select(text, npc=npc, queue_depth=self.queue_depth(), now=now)
        if self._may_speculate is not None and not self._may_speculate(npc, tier.tier):
            return
        spec = Speculation(
            speaker.name,
            speaker.utterance_id,
            name,
            text,
            tier.tier,
            snapshot=partial(self.entities.snapshot, text),
            scheduler=self.scheduler,
        )
        speaker.speculation = spec.start(engine, npc, self.scene_for(speaker.name), tts=self._tts)
        if spec.task is not None:
            self._tasks.add(spec.task)
            spec.task.add_done_callback(self._tasks.discard)


def _joined(line: str, name: str) -> str:
    """A line and the name said after its breath, as one line: "Roll a die for me, Bartok."."""
    tail = name.strip().rstrip(",;")
    end = "" if tail.endswith((".", "!", "?")) else "."
    return f"{line.strip().rstrip('.!?,;')}, {tail}{end}"
