"""``glyphoxa schema KIND``: JSON Schema (Draft 2020-12) of the YAML files, for editor completion.

Point an editor at it with a first line such as
``# yaml-language-server: $schema=../../../schemas/npc.schema.json`` (the YAML language server
of VS Code, Neovim, Helix and JetBrains reads it). ``glyphoxa schema all -o schemas`` refreshes
the copies committed in ``schemas/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.config import GlyphoxaConfig
from campaigns.content import CampaignMeta, EntitiesFile, RandomTable
from campaigns.errors import GlyphoxaError
from npcs.schema import NpcDefinition

__all__ = ["DRAFT_2020_12", "SCHEMA_MODELS", "json_schema", "register", "schema_file_name"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

#: Schema kind -> the model of that file.
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "npc": NpcDefinition,
    "campaign": CampaignMeta,
    "config": GlyphoxaConfig,
    "entities": EntitiesFile,
    "table": RandomTable,
}

_TITLES = {
    "npc": "Glyphoxa NPC (campaigns/<name>/npcs/<npc>.yaml)",
    "campaign": "Glyphoxa campaign (campaigns/<name>/campaign.yaml)",
    "config": "Glyphoxa configuration (glyphoxa.yaml)",
    "entities": "Glyphoxa knowledge-graph seed (campaigns/<name>/entities.yaml)",
    "table": "Glyphoxa random table (campaigns/<name>/tables/<table>.yaml)",
}


def schema_file_name(kind: str) -> str:
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


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "schema",
        help="print the JSON Schema of an NPC, campaign, config, entities or table file",
        description=__doc__,
    )
    parser.add_argument("kind", choices=[*SCHEMA_MODELS, "all"], help="which file's schema")
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="write to this file (for 'all': this folder, default schemas/) instead of stdout",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.kind == "all":
        folder = Path(args.output or "schemas")
        folder.mkdir(parents=True, exist_ok=True)
        for kind in SCHEMA_MODELS:
            target = folder / schema_file_name(kind)
            target.write_text(_dump(json_schema(kind)), encoding="utf-8")
            print(f"wrote {target}")
        return 0
    text = _dump(json_schema(args.kind))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
