"""``glyphoxa npc new NAME [--campaign DIR]``: scaffold a commented NPC file that passes check."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from bot.commands.schema import json_schema, schema_file_name
from bot.config_loader import check_config
from campaigns.content import slugify
from campaigns.errors import GlyphoxaError
from campaigns.yamlio import ContentError, load_model
from npcs.campaign import npc_files
from npcs.schema import EngineKind, NpcDefinition

__all__ = ["register", "render_npc", "scaffold_npc"]

_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# NPC file: one NPC per file. Check it with `glyphoxa check`; while a session runs, saving
# this file reloads the NPC (an invalid edit keeps the previous version and reports why).

# How players address the NPC; unique in the campaign (with the aliases, case-insensitive).
name: {name}
# Other names players use.
aliases: []
# Who the NPC is and how they talk: the heart of the system prompt.
personality: >-
  Describe {plain_name} here: looks, temperament, way of speaking, what they want.
voice:
  provider: piper          # piper (offline), espeak, or openai
  voice: null              # null: the provider's default; else a Piper voice name or .onnx
                           # path, an espeak-ng language (en-us+m3) or an OpenAI voice
                           # (`glyphoxa voices` lists the installed ones)
  speed: 1.0               # 0.5 .. 2.0
  pitch_shift: 0           # semitones, -12 .. 12, to tell NPCs sharing a voice apart
# cascaded (LLM + tools, then TTS), sentence_cascade (fast opener, strong continuation),
# or realtime (speech-to-speech; slow-tool turns fall back to cascaded).
engine: {engine}
# Slowest tool tier the NPC may use: fast (<= 0.5 s), standard (<= 1.5 s), deep (<= 4 s).
budget_tier: {tier}
# Tools the NPC may call, as a list: a tool's name (roll, roll_table, query_entities,
# search_rules, web_search, an MCP tool or expose_as name), every tool of a server (dice.*,
# rules.*, <mcp server>.*), one tool of a server (<server>__<tool>), or * for all.
tools: [roll]
# Topics the NPC knows about and may talk about.
knowledge_scope: []
# Things the NPC knows but keeps to itself unless its rules allow.
secret_knowledge: []
behavior_rules:
  - Stay in character; never mention being an AI.
  - Keep answers short unless asked for detail.
greeting: null
# Short lines spoken while slow tools run.
filler_lines: []
# true: answer only when named, never by continuation.
address_only: false
# Per-NPC model settings (null: the configured defaults).
llm:
  model: null
  temperature: null        # 0.0 .. 2.0
  max_tokens: null
# Only for engine: sentence_cascade.
# cascade:
#   fast_model: null
#   strong_model: null
#   opener_instruction: Reply with one short in-character sentence; no facts.
"""


def render_npc(
    name: str,
    *,
    engine: str = "cascaded",
    tier: str = "standard",
    schema_ref: str = "npc.schema.json",
) -> str:
    """The commented YAML of a new NPC."""
    return _TEMPLATE.format(
        name=json.dumps(name, ensure_ascii=False),
        plain_name=" ".join(name.split()),
        engine=engine,
        tier=tier,
        schema=schema_ref,
    )


def scaffold_npc(
    name: str,
    campaign_dir: Path,
    *,
    engine: str = "cascaded",
    tier: str = "standard",
    force: bool = False,
) -> Path:
    """Write ``<campaign>/npcs/<slug>.yaml`` (and campaign.yaml if missing); return the file.

    Refuses to overwrite a file (unless ``force``) or to reuse another NPC's name or alias.
    """
    name = " ".join(name.split())
    if not name or len(name) > 80:
        raise GlyphoxaError("NPC name must be 1 to 80 characters")
    slug = slugify(name)
    if not slug:
        raise GlyphoxaError(f"cannot make a file name from {name!r}; use letters or digits")
    npc_dir = campaign_dir / "npcs"
    target = npc_dir / f"{slug}.yaml"
    if target.exists() and not force:
        raise GlyphoxaError(f"{target} already exists (use --force to overwrite)")
    _refuse_taken_name(name, campaign_dir, skip=target)
    npc_dir.mkdir(parents=True, exist_ok=True)
    meta_file = campaign_dir / "campaign.yaml"
    if not meta_file.exists():
        title = campaign_dir.resolve().name.replace("-", " ").replace("_", " ").title()
        meta_file.write_text(
            f'name: {json.dumps(title)}\nsystem: dnd5e\ndescription: ""\n', encoding="utf-8"
        )
    text = render_npc(name, engine=engine, tier=tier, schema_ref=_schema_ref(npc_dir))
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    loaded = load_model(temporary, NpcDefinition)
    if not loaded.ok:  # the template itself is tested; this guards odd names
        temporary.unlink()
        raise ContentError(loaded.issues)
    os.replace(temporary, target)
    return target


def _refuse_taken_name(name: str, campaign_dir: Path, *, skip: Path) -> None:
    wanted = name.casefold()
    for path in npc_files(campaign_dir):
        if path == skip:
            continue
        loaded = load_model(path, NpcDefinition)
        if loaded.value is None:
            continue
        if any(word.casefold() == wanted for word in loaded.value.names()):
            raise GlyphoxaError(f"{name!r} is already a name or alias in {path}")


def _schema_ref(npc_dir: Path) -> str:
    """Path from the NPC folder to the NPC schema: the repo's schemas/ or a campaign copy."""
    shared = Path.cwd() / "schemas" / schema_file_name("npc")
    if not shared.is_file():
        shared = npc_dir.parent / ".schemas" / schema_file_name("npc")
        shared.parent.mkdir(parents=True, exist_ok=True)
        shared.write_text(json.dumps(json_schema("npc"), indent=2) + "\n", encoding="utf-8")
    return os.path.relpath(shared.resolve(), npc_dir.resolve())


def register(group: Any) -> None:
    parser = group.add_parser("new", help="scaffold a commented NPC file", description=__doc__)
    parser.add_argument("name", metavar="NAME", help='the NPC\'s name, e.g. "Old Mag"')
    parser.add_argument(
        "--campaign", default=None, help="campaign folder (default: campaign.path from the config)"
    )
    parser.add_argument("--engine", choices=[e.value for e in EngineKind], default="cascaded")
    parser.add_argument("--tier", choices=["fast", "standard", "deep"], default="standard")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.campaign:
        campaign_dir = Path(args.campaign)
    else:
        config = check_config(args.config).unwrap()
        campaign_dir = Path(config.campaign.path)
    target = scaffold_npc(
        args.name, campaign_dir, engine=args.engine, tier=args.tier, force=args.force
    )
    print(f"wrote {target}; edit it, then run: glyphoxa check {campaign_dir}")
    return 0
