"""Per-turn latency trace: when each stage of one NPC answer happened.

The table session fills one ``TurnTrace`` per NPC turn as the turn moves through the pipeline
(all timestamps in seconds on the session clock, ``time.monotonic`` by default). Metrics, the
rehearsal report and the e2e benchmark all read the same derived ``stages_ms()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["STAGES", "ToolUse", "TurnTrace"]

#: Stage name -> (from timestamp, to timestamp). Order is the order of the pipeline.
STAGES: dict[str, tuple[str, str]] = {
    "endpoint": ("speech_end", "turn_end"),
    "stt_final": ("turn_end", "final_transcript"),
    "queue": ("final_transcript", "dequeued"),
    "route": ("dequeued", "engine_start"),
    "llm_first_token": ("engine_start", "first_token"),
    "first_sentence": ("first_token", "first_sentence"),
    "tts_first_audio": ("first_sentence", "first_audio"),
    "to_playback": ("first_audio", "playback_start"),
    "voice_to_voice": ("speech_end", "playback_start"),
}


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call of a turn; ``arguments`` and ``result`` are shortened texts for displays."""

    name: str
    status: str
    duration_ms: float
    arguments: str = ""
    result: str = ""
    approval: str | None = None


@dataclass(slots=True)
class TurnTrace:
    """Everything measured about one NPC turn (mutable while the turn runs)."""

    turn_id: int
    npc: str
    speaker: str
    heard: str
    """The player's final transcript that started this turn (empty for DM ``say``)."""
    tier: str = "fast"
    tier_reason: str = ""
    address_reason: str = ""
    speech_end: float | None = None
    turn_end: float | None = None
    """When the lane declared the player's turn over (end of speech + endpointing wait)."""
    final_transcript: float | None = None
    dequeued: float | None = None
    """When the NPC's worker took the turn (later than the final if the NPC was busy)."""
    engine_start: float | None = None
    first_token: float | None = None
    first_sentence: float | None = None
    first_audio: float | None = None
    playback_start: float | None = None
    done: float | None = None
    stt_compute_ms: float | None = None
    """Time the STT model spent on the final transcript, when the provider reports it."""
    tts_compute_ms: float = 0.0
    """TTS time to first audio of the first sentence (time inside the TTS model)."""
    tools: list[ToolUse] = field(default_factory=list)
    tool_cost_ms: float = 0.0
    floor_wait_ms: float = 0.0
    """Time the finished first audio waited because another NPC held the floor."""
    reply: str = ""
    """Everything the engine produced."""
    spoken: str = ""
    """What players actually heard (differs from ``reply`` after a barge-in)."""
    interrupted: bool = False
    error: str | None = None
    fallback: str | None = None
    """The filler line the NPC said because its answer failed before it said anything."""
    speculative: bool = False
    """The answer was started on an STT partial that the final transcript confirmed."""
    speculative_entities: int = 0
    """Entities found by the lookup started on STT partials."""
    reaction_to: str | None = None
    """A reaction: the NPC whose answer named this one (``heard`` holds that answer)."""
    dropped: str | None = None
    """Why a reaction was dropped before anyone heard it (a player started speaking)."""
    budget_words: int | None = None
    """The answer's spoken budget in words (``npcs.spoken_budget``); None: none was set."""
    budget_hit: bool = False
    """The answer was cut at its spoken budget."""
    repairs: dict[str, int] = field(default_factory=dict)
    """What clean speech did to the answer, by kind (``npcs.clean_speech``)."""

    def stages_ms(self) -> dict[str, float | None]:
        """Duration of every stage in milliseconds, None where a timestamp is missing."""
        out: dict[str, float | None] = {}
        for stage, (start, end) in STAGES.items():
            a, b = getattr(self, start), getattr(self, end)
            out[stage] = None if a is None or b is None else round((b - a) * 1000.0, 2)
        return out

    def model_ms(self) -> float:
        """Time spent inside models and tools on the way to the first audio."""
        total = self.stt_compute_ms or 0.0
        if self.engine_start is not None and self.first_sentence is not None:
            # only the LLM time on the critical path: a speculative start overlaps the final
            start = max(self.engine_start, self.final_transcript or self.engine_start)
            total += max(0.0, self.first_sentence - start) * 1000.0
        return total + self.tts_compute_ms

    def overhead_ms(self) -> float | None:
        """Voice-to-voice minus model time minus the wait for the floor and the STT endpointing:
        what our own pipeline adds (routing, queues, resampling, mixing)."""
        v2v = self.stages_ms()["voice_to_voice"]
        if v2v is None:
            return None
        return round(max(0.0, v2v - self.model_ms() - self.waits_ms()), 2)

    def heard_ms(self) -> float | None:
        """End of speech to the final transcript: the endpointing wait plus recognition."""
        if self.speech_end is None or self.final_transcript is None:
            return None
        return (self.final_transcript - self.speech_end) * 1000.0

    def waits_ms(self) -> float:
        """Waiting that is policy, not overhead: end of speech to the final beyond the
        recognition time (the endpointing wait), the NPC finishing its previous answer, and
        another NPC holding the floor."""
        stages = self.stages_ms()
        wait = 0.0
        heard = self.heard_ms()
        if heard is not None:
            wait += max(0.0, heard - (self.stt_compute_ms or 0.0))
        if stages["queue"] is not None:
            wait += max(0.0, stages["queue"] - 5.0)  # a few ms of it are our own scheduling
        return wait + self.floor_wait_ms

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn_id,
            "npc": self.npc,
            "speaker": self.speaker,
            "heard": self.heard,
            "tier": self.tier,
            "tier_reason": self.tier_reason,
            "address_reason": self.address_reason,
            "reply": self.reply,
            "spoken": self.spoken,
            "interrupted": self.interrupted,
            "played": self.playback_start is not None,
            "error": self.error,
            "fallback": self.fallback,
            "tools": [
                {"name": t.name, "status": t.status, "ms": t.duration_ms} for t in self.tools
            ],
            "tool_cost_ms": self.tool_cost_ms,
            "stt_compute_ms": self.stt_compute_ms,
            "tts_compute_ms": round(self.tts_compute_ms, 2),
            "floor_wait_ms": round(self.floor_wait_ms, 2),
            "speculative": self.speculative,
            "speculative_entities": self.speculative_entities,
            "reaction_to": self.reaction_to,
            "dropped": self.dropped,
            "budget_words": self.budget_words,
            "budget_hit": self.budget_hit,
            "repairs": dict(self.repairs),
            "stages_ms": self.stages_ms(),
            "model_ms": round(self.model_ms(), 2),
            "overhead_ms": self.overhead_ms(),
        }
