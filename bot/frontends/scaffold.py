"""Scaffolds a DM starts from: a commented NPC file, and a whole campaign folder.

Everything written passes ``glyphoxa check`` and starts with a
``# yaml-language-server: $schema=...`` line, so editors complete and validate it. A scaffold
never overwrites a file (files are created exclusively) and never creates a campaign folder
the user did not ask for: ``npc new`` adds to an existing campaign, ``campaign new`` makes one.

Schema lines point at the project's ``schemas/`` when the command runs where it is (a checkout),
else at copies in the campaign's ``.schemas/`` folder, written once; ``glyphoxa schema all -o
DIR/.schemas`` refreshes them after an upgrade.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from bot.frontends.schemas import schema_file_name, schema_text
from campaigns.basics import GlyphoxaError
from campaigns.content import slugify
from campaigns.yamlio import ContentError, load_model
from npcs.campaign import npc_files
from npcs.schema import NpcDefinition

__all__ = [
    "CampaignScaffold",
    "default_campaign_dir",
    "render_npc",
    "scaffold_campaign",
    "scaffold_npc",
    "schema_ref",
]

_NPC_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# NPC file: one NPC per file. Check it with `glyphoxa check`; while a session runs, saving
# this file reloads the NPC (an invalid edit keeps the previous version and reports why).

# How players address the NPC; unique in the campaign (with the aliases, case-insensitive).
name: {name}
# Other names players use.
aliases: {aliases}
# Who the NPC is and how they talk: the heart of the system prompt.
personality: >-
  {personality}
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
tools: {tools}
# Topics the NPC knows about and may talk about.
knowledge_scope: []
# Things the NPC knows but keeps to itself unless its rules allow.
secret_knowledge: []
behavior_rules:
  - Stay in character; never mention being an AI.
  - Keep answers short unless asked for detail.
greeting: {greeting}
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

_CAMPAIGN_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# The campaign's identity. Check the whole campaign with: glyphoxa check --campaign {folder}
name: {name}
# Game system the rules tools look things up in (dnd5e: the SRD 5.1).
system: dnd5e
description: >-
  Where the campaign is set and what is going on, in a sentence or two.
"""

_ENTITIES_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# Knowledge-graph seed, loaded into campaign memory when a session starts. When a player names
# an entity (or an alias), its description reaches the NPC's prompt as a campaign note.
# Types: player_character, npc, location, faction, item, quest. An id defaults to the slug of
# the name ("The Gilded Goose" -> the-gilded-goose); relations refer to ids with from/type/to.
entities:
  - name: Mira
    type: npc
    description: Innkeeper of the Gilded Goose; hears every rumour in town.
  - name: The Gilded Goose
    type: location
    description: A warm, crowded inn by the market square.
    aliases: [the Goose]
relations:
  - {{from: mira, type: works_at, to: the-gilded-goose}}
"""

_TABLE_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# A random table NPCs roll with the roll_table tool. Weighted: an entry without weight counts
# 1. Ranged instead: give every entry a range (01-05) and set dice (default d100).
name: rumors
description: What Mira overhears across the bar.
entries:
  - text: The old mill has been grinding at night, with no grain delivered.
    weight: 2
  - text: A stranger paid for a week's lodging in gold and has not left the room since.
  - text: Someone is buying every black candle in town.
"""

_EXAMPLE_NAME = "Mira"
_EXAMPLE_PERSONALITY = (
    "Mira runs the Gilded Goose: warm, quick-witted and nosy, she remembers every face and trades "
    "rumours for coin or a good story. She speaks plainly, laughs easily and never gives "
    "anything away for free."
)
_EXAMPLE_GREETING = "Welcome to the Gilded Goose! Sit anywhere that isn't sticky."


def render_npc(
    name: str,
    *,
    engine: str = "cascaded",
    tier: str = "standard",
    schema_ref: str = "npc.schema.json",
    aliases: tuple[str, ...] = (),
    personality: str | None = None,
    tools: tuple[str, ...] = ("roll",),
    greeting: str | None = None,
) -> str:
    """The commented YAML of a new NPC (placeholders where no personality or greeting is given)."""
    plain_name = " ".join(name.split())
    placeholder = (
        f"Describe {plain_name} here: looks, temperament, way of speaking, what they want."
    )
    return _NPC_TEMPLATE.format(
        name=json.dumps(name, ensure_ascii=False),
        aliases=json.dumps(list(aliases), ensure_ascii=False),
        personality=" ".join((personality or placeholder).split()),
        engine=engine,
        tier=tier,
        tools=json.dumps(list(tools)),
        greeting=json.dumps(greeting, ensure_ascii=False),
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

    Refuses a campaign folder that does not exist (``glyphoxa campaign new`` makes one), to
    overwrite a file (unless ``force``) and to reuse another NPC's name or alias.
    """
    name = " ".join(name.split())
    if not name or len(name) > 80:
        raise GlyphoxaError("NPC name must be 1 to 80 characters")
    slug = slugify(name)
    if not slug:
        raise GlyphoxaError(f"cannot make a file name from {name!r}; use letters or digits")
    if not campaign_dir.is_dir():
        raise GlyphoxaError(
            f"{campaign_dir}: campaign folder not found; "
            f"create it with: glyphoxa campaign new NAME --dir {campaign_dir}"
        )
    npc_dir = campaign_dir / "npcs"
    target = npc_dir / f"{slug}.yaml"
    if target.exists() and not force:
        raise GlyphoxaError(f"{target} already exists (use --force to overwrite)")
    _refuse_taken_name(name, campaign_dir, skip=target)
    npc_dir.mkdir(exist_ok=True)
    meta_file = campaign_dir / "campaign.yaml"
    if not meta_file.exists():
        title = campaign_dir.resolve().name.replace("-", " ").replace("_", " ").title()
        _create(meta_file, _render_campaign(title, campaign_dir))
    text = render_npc(
        name, engine=engine, tier=tier, schema_ref=schema_ref("npc", npc_dir, campaign_dir)
    )
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    loaded = load_model(temporary, NpcDefinition)
    if not loaded.ok:  # the template itself is tested; this guards odd names
        temporary.unlink()
        raise ContentError(loaded.issues)
    if force:
        os.replace(temporary, target)
        return target
    temporary.unlink()
    if not _create(target, text):  # a file that appeared meanwhile is never replaced
        raise GlyphoxaError(f"{target} already exists (use --force to overwrite)")
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


@dataclass(slots=True)
class CampaignScaffold:
    """What ``campaign new`` did: the folder, the files it created and those it left alone."""

    folder: Path
    created: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def default_campaign_dir(name: str) -> Path:
    """``campaigns/<slug of name>``: where the project keeps campaigns."""
    slug = slugify(name)
    if not slug:
        raise GlyphoxaError(f"cannot make a folder name from {name!r}; use letters or digits")
    return Path("campaigns") / slug


def scaffold_campaign(name: str, folder: Path) -> CampaignScaffold:
    """Create a campaign folder: campaign.yaml, entities.yaml, npcs/ with one example NPC and
    tables/ with one example table, each with its schema line.

    An existing folder is filled in (its files are kept); a folder that already has a
    campaign.yaml is refused, and the example NPC is added only to an empty ``npcs/``.
    """
    name = " ".join(name.split())
    if not name or len(name) > 80:
        raise GlyphoxaError("campaign name must be 1 to 80 characters")
    meta_file = folder / "campaign.yaml"
    if meta_file.exists():
        raise GlyphoxaError(
            f"{folder} is already a campaign ({meta_file} exists); "
            f"add an NPC with: glyphoxa npc new NAME --campaign {folder}"
        )
    if folder.exists() and not folder.is_dir():
        raise GlyphoxaError(f"{folder} is a file, not a folder; choose another --dir")
    result = CampaignScaffold(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "npcs").mkdir(exist_ok=True)
    (folder / "tables").mkdir(exist_ok=True)
    files = {
        meta_file: _render_campaign(name, folder),
        folder / "entities.yaml": _ENTITIES_TEMPLATE.format(
            schema=schema_ref("entities", folder, folder)
        ),
        folder / "tables" / "rumors.yaml": _TABLE_TEMPLATE.format(
            schema=schema_ref("table", folder / "tables", folder)
        ),
    }
    if not npc_files(folder):
        files[folder / "npcs" / f"{slugify(_EXAMPLE_NAME)}.yaml"] = render_npc(
            _EXAMPLE_NAME,
            schema_ref=schema_ref("npc", folder / "npcs", folder),
            aliases=("innkeeper",),
            personality=_EXAMPLE_PERSONALITY,
            tools=("roll", "roll_table"),
            greeting=_EXAMPLE_GREETING,
        )
    for path, text in files.items():
        (result.created if _create(path, text) else result.kept).append(path)
    return result


def _render_campaign(name: str, folder: Path) -> str:
    return _CAMPAIGN_TEMPLATE.format(
        schema=schema_ref("campaign", folder, folder),
        folder=folder,
        name=json.dumps(name, ensure_ascii=False),
    )


def _create(path: Path, text: str) -> bool:
    """Write a new file; False (and nothing written) when it exists."""
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        return False
    return True


def schema_ref(kind: str, file_dir: Path, campaign_dir: Path) -> str:
    """The ``$schema`` path, relative to ``file_dir``, of a file kind's schema: the project's
    ``schemas/`` in the current folder if it has one, else the campaign's ``.schemas/`` copy
    (written when missing)."""
    shared = Path.cwd() / "schemas" / schema_file_name(kind)
    if not shared.is_file():
        shared = campaign_dir / ".schemas" / schema_file_name(kind)
        shared.parent.mkdir(parents=True, exist_ok=True)
        _create(shared, schema_text(kind))
    return os.path.relpath(shared.resolve(), file_dir.resolve())
