"""``glyphoxa rules import PATH`` / ``rules search QUERY`` / ``rules get ID``: the rules index.

``import`` reads the SRD 5.1 JSON files (5e-database format, ``src/2014/en``) from PATH and stores
the index with our own rules summary at ``.glyphoxa/rules.db`` (or ``--db``), where the ``rules``
tool server finds it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from campaigns.errors import GlyphoxaError
from tools.builtin.rules import DEFAULT_RULES_DB, SRD_ATTRIBUTION, import_srd, open_index

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("rules", help="import and search the rules index (SRD 5.1 + summary)")
    actions = parser.add_subparsers(dest="rules_command", metavar="ACTION")
    imp = actions.add_parser("import", help="index an SRD 5.1 folder (5e-database JSON)")
    imp.add_argument("path", help="folder holding 5e-SRD-*.json")
    imp.add_argument("--db", default=None, help=f"index file (default {DEFAULT_RULES_DB})")
    imp.set_defaults(func=_import)
    search = actions.add_parser("search", help="search the rules index")
    search.add_argument("query", nargs="+")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--db", default=None)
    search.set_defaults(func=_search)
    get = actions.add_parser("get", help="show one rules entry by id, e.g. spell:fireball")
    get.add_argument("id")
    get.add_argument("--db", default=None)
    get.set_defaults(func=_get)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _srd_path(args: argparse.Namespace) -> str | None:
    from bot.config_loader import load_config

    return load_config(args.config).tools.srd_path


def _import(args: argparse.Namespace) -> int:
    db = Path(args.db) if args.db else DEFAULT_RULES_DB
    started = time.perf_counter()
    counts = import_srd(args.path, db)
    took = time.perf_counter() - started
    print(
        f"indexed {counts['srd_entries']} SRD entries and {counts['summary_entries']} summary "
        f"entries into {counts['db']} in {took:.1f} s"
    )
    print(SRD_ATTRIBUTION)
    return 0


def _search(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise GlyphoxaError("--limit must be at least 1")
    index = open_index(_srd_path(args), Path(args.db) if args.db else DEFAULT_RULES_DB)
    try:
        hits = index.search(" ".join(args.query), limit=args.limit)
    finally:
        index.close()
    if not hits:
        print("no matching rules")
        return 1
    for hit in hits:
        print(f"{hit.id:40} {hit.name}")
        if hit.snippet:
            print(f"    {hit.snippet.replace(chr(10), ' ')[:160]}")
    return 0


def _get(args: argparse.Namespace) -> int:
    index = open_index(_srd_path(args), Path(args.db) if args.db else DEFAULT_RULES_DB)
    try:
        doc = index.get(args.id)
    finally:
        index.close()
    if doc is None:
        raise GlyphoxaError(f"no rules entry {args.id!r}; try `glyphoxa rules search WORDS`")
    print(f"{doc.name} ({doc.id}, {doc.source})\n\n{doc.text}")
    return 0
