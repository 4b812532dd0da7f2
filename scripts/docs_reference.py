"""The docs' reference pages, ``docs/reference/*.md``, generated and committed.

The file references (NPC files, campaign.yaml, entities.yaml, random tables, glyphoxa.yaml and
rehearsal scenes) are rendered from the JSON Schemas in ``schemas/``, the command line from
``bot.cli.build_parser()``. They are committed, so they are read where the DM reads the docs
(the repository, an editor, the built site) and not only on the site; they cannot drift from
the code: the site's build (``scripts/docs_hooks.py``) and ``tests/docs/test_reference.py``
fail while a page differs from what this writes.

    .venv/bin/python scripts/docs_reference.py          # write the pages again
    .venv/bin/python scripts/docs_reference.py --check  # list the pages out of date (exit 1)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's packages import from its root
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_cli import render_cli_page  # noqa: E402
from docs_schema import render_schema_page  # noqa: E402

__all__ = ["DOCS", "SCHEMA_PAGES", "main", "reference_pages", "stale_pages"]

DOCS = ROOT / "docs"

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
    "scene": (
        "reference/scene.md",
        "Rehearsal scenes",
        "A scene script for `glyphoxa rehearse`: the players' lines, the DM's actions and what "
        "to check. [Getting started](../getting-started.md#write-your-own-scene) has an "
        "example.",
    ),
}


def reference_pages() -> dict[str, str]:
    """Page path under ``docs/`` -> its Markdown, as generated from the code now."""
    from bot.cli import build_parser

    pages = {}
    for name, (page, title, intro) in SCHEMA_PAGES.items():
        source = f"schemas/{name}.schema.json"
        schema = json.loads((ROOT / source).read_text(encoding="utf-8"))
        pages[page] = render_schema_page(schema, title=title, intro=intro, source=source)
    pages["reference/cli.md"] = render_cli_page(build_parser())
    return pages


def stale_pages(pages: dict[str, str] | None = None) -> list[str]:
    """The pages whose committed text differs from a fresh one (or that are missing)."""
    pages = reference_pages() if pages is None else pages
    stale = []
    for page, text in pages.items():
        path = DOCS / page
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(page)
    return stale


def main(argv: list[str]) -> int:
    pages = reference_pages()
    if argv[1:] == ["--check"]:
        stale = stale_pages(pages)
        for page in stale:
            print(f"docs/{page} is out of date: run .venv/bin/python scripts/docs_reference.py")
        return 1 if stale else 0
    if argv[1:]:
        print("usage: scripts/docs_reference.py [--check]", file=sys.stderr)
        return 2
    for page, text in pages.items():
        path = DOCS / page
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote docs/{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
