"""MkDocs hooks (``hooks:`` in mkdocs.yml): the reference pages, generated at build time.

The file reference (``reference/npc.md`` and the others) is rendered from the JSON Schemas in
``schemas/`` and the CLI reference from ``bot.cli.build_parser()``. Nothing generated is
written into ``docs/``: the pages exist only in the build, so they cannot drift from the code
or be edited by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# MkDocs puts this file's folder on sys.path while it loads a hook, so its siblings import.
from docs_cli import render_cli_page
from docs_schema import render_schema_page

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["SCHEMA_PAGES", "on_files"]

#: schema file -> (page, title, what the reader is looking at)
SCHEMA_PAGES: dict[str, tuple[str, str, str]] = {
    "npc": (
        "reference/npc.md",
        "NPC files",
        "One NPC per file in `campaigns/<campaign>/npcs/*.yaml`. How to write one, with "
        "examples, is in [Authoring NPCs and campaigns](../authoring.md); this page lists every "
        "key.",
    ),
    "campaign": (
        "reference/campaign.md",
        "campaign.yaml",
        "The campaign's identity, its tool-approval defaults and whether NPCs react to each "
        "other, in `campaigns/<campaign>/campaign.yaml`.",
    ),
    "entities": (
        "reference/entities.md",
        "entities.yaml",
        "The knowledge-graph seed, `campaigns/<campaign>/entities.yaml`: characters, places, "
        "factions, items and quests, and how they relate. It is loaded into campaign memory "
        "the first time the campaign's memory opens.",
    ),
    "table": (
        "reference/table.md",
        "Random tables",
        "One random table per file in `campaigns/<campaign>/tables/*.yaml`, rolled by the "
        "`roll_table` tool.",
    ),
    "config": (
        "reference/config.md",
        "glyphoxa.yaml",
        "Every key of the bot's configuration. The shipped `glyphoxa.yaml` sets each section "
        "with a comment; [Configuration](../configuration.md) explains `${VAR}` references "
        "and secrets, and [Choose your models](../models.md) has complete provider examples.",
    ),
}

SCENE_INTRO = (
    "A scene script for `glyphoxa rehearse`: the players' lines, the DM's actions and what to "
    "check. [Getting started](../getting-started.md#write-your-own-scene) has an example."
)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the build."""
    from mkdocs.structure.files import File

    for name, (page, title, intro) in SCHEMA_PAGES.items():
        source = f"schemas/{name}.schema.json"
        schema = json.loads((ROOT / source).read_text(encoding="utf-8"))
        content = render_schema_page(schema, title=title, intro=intro, source=source)
        files.append(File.generated(config, page, content=content))
    from bot.cli import build_parser
    from bot.rehearsal.scene import Scene

    scene = Scene.model_json_schema(mode="serialization")
    content = render_schema_page(
        scene, title="Rehearsal scenes", intro=SCENE_INTRO, source="bot/rehearsal/scene.py"
    )
    files.append(File.generated(config, "reference/scene.md", content=content))
    cli = render_cli_page(build_parser())
    files.append(File.generated(config, "reference/cli.md", content=cli))
    return files
