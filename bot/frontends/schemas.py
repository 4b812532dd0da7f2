"""JSON Schemas (Draft 2020-12) of the YAML files a DM writes, for editor completion.

``glyphoxa schema`` prints or writes them; ``glyphoxa campaign new`` and ``npc new`` point each
scaffolded file at its schema with a first line such as
``# yaml-language-server: $schema=../../../schemas/npc.schema.json`` (the YAML language server
of VS Code, Neovim, Helix and JetBrains reads it).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from bot.frontends.rehearsal.scene import Scene
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError
from campaigns.content import CampaignMeta, EntitiesFile, RandomTable
from npcs.schema import NpcDefinition

__all__ = ["DRAFT_2020_12", "SCHEMA_MODELS", "json_schema", "schema_file_name", "schema_text"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

#: Schema kind -> the model of that file.
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "npc": NpcDefinition,
    "campaign": CampaignMeta,
    "config": GlyphoxaConfig,
    "entities": EntitiesFile,
    "table": RandomTable,
    "scene": Scene,
}

_TITLES = {
    "npc": "Glyphoxa NPC (campaigns/<name>/npcs/<npc>.yaml)",
    "campaign": "Glyphoxa campaign (campaigns/<name>/campaign.yaml)",
    "config": "Glyphoxa configuration (glyphoxa.yaml)",
    "entities": "Glyphoxa knowledge-graph seed (campaigns/<name>/entities.yaml)",
    "table": "Glyphoxa random table (campaigns/<name>/tables/<table>.yaml)",
    "scene": "Glyphoxa rehearsal scene (a scene file for glyphoxa rehearse)",
}


def schema_file_name(kind: str) -> str:
    """``npc`` -> ``npc.schema.json``."""
    return f"{kind}.schema.json"


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one file kind (validation mode: what a user may write)."""
    try:
        model = SCHEMA_MODELS[kind]
    except KeyError:
        choices = ", ".join(SCHEMA_MODELS)
        raise GlyphoxaError(f"unknown schema {kind!r}; choose from {choices} or all") from None
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DRAFT_2020_12, "title": _TITLES[kind], **_without_title(schema)}


def _without_title(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "title"}


def schema_text(kind: str) -> str:
    """The schema of one file kind as the JSON text written to ``schemas/``."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"
