"""``build_session``: builds a ``TableSession`` from its providers and options.

The session's constructor only assembles; this builds each part, gives it what it uses (the
seams in ``seams.py``), and groups them into the few cohesive parts of ``parts.py``: the cast,
the record, the voices, the answers, the DM's desk and the table's tasks. Parts that must hear
each other (the lanes' events reach barge-in and routing; an answer's end reaches its follow-up)
are joined here, so none of them holds the session.
``bot.table.assembly.table.open_table`` builds the providers from ``glyphoxa.yaml`` and calls this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bot.audio.speech import (
    BargeInController,
    LaneEvent,
    Mixer,
    SttProvider,
    TtsProvider,
    Vocabulary,
    VoiceRouter,
)
from bot.audio.speech.endpointing import TurnModel
from bot.audio.speech.scheduler import CpuScheduler
from bot.settings.config import GlyphoxaConfig
from bot.table.session.alerts import TroubleDesk
from bot.table.session.bus import SessionEvents, TurnNumbers
from bot.table.session.characters import CharacterControls, CharacterRoster
from bot.table.session.controls import DmControls
from bot.table.session.early import EarlyAnswers, SpeculatePolicy
from bot.table.session.entities import EntityLookup
from bot.table.session.follow_up import AnswerFollowUp
from bot.table.session.npc_queue import NpcQueues
from bot.table.session.npc_reload import NpcReloader
from bot.table.session.parts import Cast, Record
from bot.table.session.prefill import Prefiller
from bot.table.session.reactions import Reactions
from bot.table.session.recorder import TranscriptRecorder
from bot.table.session.routing import Router
from bot.table.session.scene_log import SceneLog
from bot.table.session.seats import TableSeats
from bot.table.session.session import EngineResolver, TableSession
from bot.table.session.speakers import Speaker, SpeakerLanes
from bot.table.session.table_parts import Answers, DmDesk, TableParts, TableTasks, Voices
from bot.table.session.timing import TimedTts
from bot.table.session.trace import TurnTrace
from bot.table.session.turns import NpcTurn
from bot.table.session.voice_commands import VoiceCommands
from bot.telemetry.metrics import METRICS, Metrics
from npcs.addressing import AddressDetector
from npcs.campaign import Campaign
from npcs.context import SceneLine
from npcs.tier_selector import TierSelector

__all__ = ["build_session"]


def build_session(
    *,
    config: GlyphoxaConfig,
    campaign: Campaign,
    stt: SttProvider,
    tts: TtsProvider,
    engines: EngineResolver,
    memory: Any = None,
    mixer: Mixer | None = None,
    metrics: Metrics = METRICS,
    dm_speakers: Iterable[str] = (),
    vad_factory: Callable[[], Any] | None = None,
    session_title: str | None = None,
    speculate: SpeculatePolicy = True,
    prefill: bool = False,
    memory_session_id: str | None = None,
    scheduler: CpuScheduler | None = None,
    turn_model: TurnModel | None = None,
) -> TableSession:
    """A table session (not started) for one voice connection.

    ``memory_session_id``: a memory session to continue (a table resumed after a restart);
    ``scheduler``: share one between tables in one process (default: the table's own);
    ``turn_model``: judges pauses (``speech.turn``; None: turns end after the hangover);
    ``speculate``: start answers on judged pauses (or decide per NPC and tier); ``prefill``:
    evaluate NPC prompts ahead (a local LLM's prompt cache).
    """
    tasks = TableTasks()
    events = SessionEvents()
    characters = CharacterRoster(campaign, memory)
    addressing = AddressDetector(
        campaign.npcs,
        continuation_window_s=config.tiers.continuation_window_s,
        characters=characters.names(),
    )
    cast = Cast(campaign, addressing, TierSelector(config.tiers), TableSeats())
    record = Record(SceneLog(), TranscriptRecorder(memory, campaign.name), events, TurnNumbers())
    scheduler = scheduler or CpuScheduler()
    mixer = mixer or Mixer(config.speech)
    tts_timed = TimedTts(tts, metrics, scheduler)
    trouble = TroubleDesk(events.emit, metrics)
    voices = tts if isinstance(tts, VoiceRouter) else None
    if voices is not None:  # a voice that breaks mid-table is told to the DM
        voices.on_fallback = trouble.voice_failed

    def heard(speaker: Speaker, event: LaneEvent) -> None:  # the lanes did their bookkeeping
        barge_in.observe(event)
        router.on_lane_event(speaker, event)

    lanes = SpeakerLanes(
        stt=stt,
        config=config.speech,
        metrics=metrics,
        vocabulary=Vocabulary.from_campaign(campaign, characters.names()),
        vad_factory=vad_factory,
        spawn=tasks.spawn,
        on_event=heard,
        scheduler=scheduler,
        turn_model=turn_model,
    )

    def scene_for(speaker: str) -> list[SceneLine]:
        began = next((s.clock.wall_at(s.onset) for s in lanes if s.name == speaker), None)
        return record.scene.heard_by(speaker, began)

    def done(turn: NpcTurn) -> None:
        follow_up.done(turn)

    def written(turn: NpcTurn) -> None:
        follow_up.written(turn)

    turns = NpcQueues(
        cast=cast,
        mixer=mixer,
        engines=engines,
        tts=tts_timed,
        scene=scene_for,
        spawn=tasks.spawn,
        on_done=done,
        on_written=written,
        scheduler=scheduler,
    )
    prefiller = Prefiller(engines, prefill)
    entities = EntityLookup(campaign, memory)
    reactions = Reactions(
        campaign=campaign,
        addressing=addressing,
        turns=turns,
        lanes=lanes,
        engines=engines,
        seats=cast.seats,
        events=events,
        new_trace=record.new_trace,
    )
    npc_reload = NpcReloader(
        campaign=campaign,
        addressing=addressing,
        characters=characters,
        lanes=lanes,
        voices=voices,
        events=events,
    )
    controls = DmControls(
        campaign=campaign,
        tiers=cast.tiers,
        turns=turns,
        seats=cast.seats,
        reactions=reactions,
        events=events,
        new_trace=record.new_trace,
        reload=npc_reload.apply_edits,
    )
    voice = VoiceCommands(
        config=config,
        campaign=campaign,
        mixer=mixer,
        turns=turns,
        controls=controls,
        new_trace=record.new_trace,
        mentions=addressing.mentions,
        dm_speakers=dm_speakers,
    )
    early = EarlyAnswers(
        prefiller=prefiller,
        entities=entities,
        scene_for=scene_for,
        scheduler=scheduler,
        tts=tts_timed,
        adopt=tasks.adopt,
        speculate=speculate,
        resume_ms=float(config.speech.turn.pause_ms),
    )
    router = Router(
        cast=cast,
        record=record,
        turns=turns,
        lanes=lanes,
        entities=entities,
        dm=voice,
        reactions=reactions,
        early=early,
    )
    traces: list[TurnTrace] = []
    follow_up = AnswerFollowUp(
        cast=cast,
        record=record,
        turns=turns,
        prefiller=prefiller,
        reactions=reactions,
        trouble=trouble,
        metrics=metrics,
        traces=traces,
    )
    barge_in = BargeInController(
        mixer,
        confirm_ms=config.speech.barge_in_confirm_ms,
        backchannels=config.speech.backchannels,
        on_barge_in=router.on_barge_in,
    )
    casting = CharacterControls(
        roster=characters,
        lanes=lanes,
        addressing=addressing,
        names_changed=npc_reload.names_changed,
    )
    parts = TableParts(
        config=config,
        metrics=metrics,
        memory=memory,
        cast=cast,
        record=record,
        voices=Voices(lanes, mixer, barge_in, scheduler),
        answers=Answers(
            router, turns, reactions, follow_up, prefiller, entities, trouble, traces, engines
        ),
        desk=DmDesk(controls, voice, npc_reload, characters, casting),
        tasks=tasks,
    )
    return TableSession(parts, title=session_title, resume_memory=memory_session_id)
