"""The NPC definition a DM writes as ``campaigns/<name>/npcs/<npc>.yaml``.

Field docstrings become JSON Schema descriptions, which editors show as completion help.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from campaigns.basics import TierName
from campaigns.content import ApprovalMode, ToolApproval
from campaigns.providers.voices import VoiceSettings

__all__ = [
    "PROSE_LIST_FIELDS",
    "CascadeSettings",
    "EngineKind",
    "LlmOverrides",
    "NpcDefinition",
    "SpokenBudgetWords",
]

#: Lists whose items are sentences: a flow list there that a comma split is warned about.
PROSE_LIST_FIELDS = (
    "secret_knowledge",
    "behavior_rules",
    "filler_lines",
    "fallback_lines",
    "example_lines",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class EngineKind(StrEnum):
    CASCADED = "cascaded"
    """LLM with tools, then sentence-by-sentence TTS. Handles every tier."""
    REALTIME = "realtime"
    """Speech-to-speech (OpenAI Realtime). Slow-tool turns fall back to cascaded."""
    SENTENCE_CASCADE = "sentence_cascade"
    """A fast model speaks an opener at once; a strong model continues it with tools."""


class LlmOverrides(_Strict):
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0, le=8192)


class SpokenBudgetWords(_Strict):
    """Words one spoken answer may have at each tier; empty: the default (fast 30, standard
    60, deep 120). An answer ends at the last whole sentence that fits."""

    fast: int | None = Field(default=None, ge=5, le=400)
    standard: int | None = Field(default=None, ge=5, le=400)
    deep: int | None = Field(default=None, ge=5, le=400)


class CascadeSettings(_Strict):
    """Only used by the ``sentence_cascade`` engine."""

    fast_model: str | None = None
    strong_model: str | None = None
    opener_instruction: str = (
        "Reply with one short in-character sentence that acknowledges the player; no facts."
    )


class NpcDefinition(_Strict):
    name: str = Field(min_length=1, max_length=80)
    """How players address the NPC; must be unique in the campaign."""
    aliases: list[str] = Field(default_factory=list)
    """Other names players use ("Bart", "the barkeep")."""
    personality: str = Field(min_length=1)
    """Who the NPC is and how they talk; the heart of the system prompt."""
    voice: VoiceSettings = Field(default_factory=VoiceSettings)
    engine: EngineKind = EngineKind.CASCADED
    budget_tier: TierName = Field(default="standard", validate_default=True)
    """Slowest tool tier this NPC may use unless the DM lifts it (fast, standard, deep)."""
    tools: list[str] = Field(default_factory=list)
    """Whitelist of tool names this NPC may call; empty means none."""
    knowledge_scope: list[str] = Field(default_factory=list)
    """Topics the NPC knows about and may talk about."""
    secret_knowledge: list[str] = Field(default_factory=list)
    """Things the NPC knows but will not reveal unless its behaviour rules allow."""
    behavior_rules: list[str] = Field(default_factory=list)
    greeting: str | None = None
    filler_lines: list[str] = Field(default_factory=list)
    """Short lines spoken while slow tools run ("Let me think...")."""
    fallback_lines: list[str] = Field(default_factory=list)
    """Lines said in character when an answer cannot be used (the model failed, or wrote
    nothing clean even when asked again); empty: the filler lines, else built-in ones."""
    example_lines: list[str] = Field(default_factory=list)
    """A few lines in the NPC's own voice ("Ale's two copper, and worth every one."): shown to
    the model as how this NPC talks. Two to four short lines help small models most."""
    spoken_budget: SpokenBudgetWords = Field(default_factory=SpokenBudgetWords)
    """Words an answer may have at each tier (``{fast: 30, standard: 60, deep: 120}``)."""
    emotes: bool = False
    """Keep stage directions (``*wipes a mug*``) in the NPC's lines; by default they are cut
    before the voice."""
    address_only: bool = False
    """Answer only when named, never by continuation or as the sole NPC in the scene."""
    llm: LlmOverrides = Field(default_factory=LlmOverrides)
    cascade: CascadeSettings = Field(default_factory=CascadeSettings)
    approval: ApprovalMode | ToolApproval | None = None
    """When this NPC's tool calls wait for the DM's OK: ``never``, ``ask`` (once per tool per
    session) or ``always_ask``, or ``{default: ..., tools: {write_file: always_ask}}``. Empty:
    the campaign's ``approval`` settings decide."""

    def names(self) -> list[str]:
        """Name first, then aliases: everything address detection matches."""
        return [self.name, *self.aliases]
