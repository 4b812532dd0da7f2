"""Models of a campaign folder's content files (other than NPCs, which live in ``npcs.schema``).

``campaign.yaml`` -> CampaignMeta, ``entities.yaml`` -> EntitiesFile (knowledge-graph seed),
``tables/*.yaml`` -> RandomTable. Loading with file:line errors is done by the campaign loader.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

__all__ = [
    "ENTITY_TYPES",
    "ApprovalMode",
    "CampaignApproval",
    "CampaignMeta",
    "EntitiesFile",
    "EntitySeed",
    "RandomTable",
    "ReactionMode",
    "RelationSeed",
    "TableEntry",
    "ToolApproval",
    "slugify",
]

ENTITY_TYPES = ("player_character", "npc", "location", "faction", "item", "quest")
EntityType = Literal["player_character", "npc", "location", "faction", "item", "quest"]


def slugify(name: str) -> str:
    """Stable id from a display name: ``"The Rusty Flagon"`` -> ``"the-rusty-flagon"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


ApprovalMode = Literal["never", "ask", "always_ask"]
"""When a tool call waits for the DM: ``never``; ``ask`` (the first call of a tool by an NPC in
a session; an approval is remembered for the session); ``always_ask`` (every call)."""


class ToolApproval(_Strict):
    """An NPC's approval settings: a default and per-tool modes."""

    default: ApprovalMode | None = None
    """Mode for this NPC's tools not listed under ``tools``; empty: the campaign's default."""
    tools: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Mode per tool name (as exposed to the NPC)."""


class CampaignApproval(_Strict):
    """DM approval of tool calls (``approval:`` in campaign.yaml)."""

    enabled: bool = False
    """Ask the DM before tools with side effects run (anything not read-only): their default
    mode becomes ``ask``. NPCs and tools may still set their own mode either way."""
    timeout_s: float = Field(default=45.0, gt=0, le=600)
    """How long a call waits for the DM; then it is refused."""
    tools: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Mode per tool name for every NPC of the campaign."""


ReactionMode = Literal["off", "mentioned"]
"""Whether NPCs react to each other: ``off``, or ``mentioned`` (an NPC named in another NPC's
answer may add one short reaction after it)."""


def _unquoted_off(value: object) -> object:
    """YAML reads an unquoted ``off`` (and ``no``, ``false``) as false: that is ``off``. True
    (``on``, ``yes``) names no mode, so it is refused with the choices."""
    if value is False:
        return "off"
    if value is True:
        raise ValueError("write reactions: mentioned (NPCs react when another NPC's answer "
                         "names them) or reactions: off")  # fmt: skip
    return value


_REACTIONS_SCHEMA = {
    "anyOf": [
        {"enum": ["off", "mentioned"], "type": "string"},
        {"const": False, "description": "an unquoted off (YAML reads it as false)"},
    ]
}


class CampaignMeta(_Strict):
    name: str = Field(min_length=1)
    system: str = "dnd5e"
    """Game system, e.g. ``dnd5e``; rules lookup uses it."""
    description: str = ""
    approval: CampaignApproval = Field(default_factory=CampaignApproval)
    characters: dict[str, str] = Field(
        default_factory=dict,
        json_schema_extra={"propertyNames": {"pattern": r"^[0-9]{17,20}$"}},
    )
    """Who plays whom: a player's Discord user id -> their character's name. Transcripts, NPC
    prompts, memory and recaps call the player by it; ``/iam`` at the table overrides it."""

    @field_validator("characters", mode="before")
    @classmethod
    def _ids_as_text(cls, value: object) -> object:
        """Unquoted ids read as YAML integers; they are ids, kept as written."""
        if isinstance(value, dict):
            return {str(k) if isinstance(k, int) else k: v for k, v in value.items()}
        return value

    reactions: Annotated[
        ReactionMode, BeforeValidator(_unquoted_off), WithJsonSchema(_REACTIONS_SCHEMA)
    ] = "off"
    """NPCs reacting to each other: ``mentioned`` lets an NPC named in another NPC's answer add
    one short reaction after it (at most one per player turn, never while a player speaks);
    ``off`` (default): only the NPCs players speak to answer."""


class EntitySeed(_Strict):
    id: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Stable id used by relations; defaults to the slug of the name."""
    name: str = Field(min_length=1)
    type: EntityType
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.id or slugify(self.name)


class RelationSeed(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)

    source: str = Field(alias="from")
    """Id of the entity the relation starts at."""
    type: str = Field(min_length=1, pattern=r"^[a-z][a-z0-9_]*$")
    """Relation kind in snake_case: ``works_at``, ``member_of``, ``owns``, ``seeks``."""
    target: str = Field(alias="to")
    description: str = ""


class EntitiesFile(_Strict):
    entities: list[EntitySeed] = Field(default_factory=list)
    relations: list[RelationSeed] = Field(default_factory=list)


class TableEntry(_Strict):
    text: str = Field(min_length=1)
    weight: float | None = Field(default=None, gt=0)
    """Relative weight; entries without weight or range count 1."""
    range: str | None = Field(default=None, pattern=r"^\d{1,3}(-\d{1,3})?$")
    """d100-style range such as ``01-05`` or ``42``; use either weights or ranges in one table."""

    def bounds(self) -> tuple[int, int] | None:
        if self.range is None:
            return None
        low, _, high = self.range.partition("-")
        return int(low), int(high or low)


class RandomTable(_Strict):
    name: str = Field(min_length=1, pattern=r"^[a-z0-9_]+$")
    """Table id used by ``roll_table``; snake_case."""
    description: str = ""
    dice: str | None = None
    """Die used for ranged tables (default ``d100``)."""
    entries: list[TableEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _ranges_or_weights(self) -> RandomTable:
        ranged = [e.range is not None for e in self.entries]
        if any(ranged) and not all(ranged):
            raise ValueError("either every entry has a range or none does")
        if all(ranged) and any(e.weight is not None for e in self.entries):
            raise ValueError("an entry cannot have both range and weight")
        return self
