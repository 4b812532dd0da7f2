"""``glyphoxa rules import PATH`` / ``rules search QUERY`` / ``rules get ID``: the rules index.

``import`` reads the SRD 5.1 JSON files (5e-database format, ``src/2014/en``) from PATH and stores
the index with our own rules summary at ``tools.rules_db`` of glyphoxa.yaml (``.glyphoxa/rules.db``
by default; or ``--db``), where the ``rules`` tool server finds it. ``search --json`` prints
[{"id", "name", "category", "source", "snippet"}]; ``get --json`` prints {"id", "name",
"category", "source", "system", "text"}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bot.frontends.commands._options import Subcommands, add_json_option, load_config, plain

__all__ = ["RULES_DB", "register"]

RULES_DB = ".glyphoxa/rules.db"
"""The default of ``tools.rules_db`` (``BuiltinToolsConfig``; a test keeps them equal), spelled
out so that building the parser imports no tool code."""

_DB_HELP = f"index file (default: tools.rules_db of glyphoxa.yaml, else {RULES_DB})"


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "rules",
        help="import and search the rules index (SRD 5.1 + summary)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="rules_command", metavar="ACTION")
    imp = actions.add_parser("import", help="index an SRD 5.1 folder (5e-database JSON)")
    imp.add_argument("path", metavar="PATH", help="folder holding 5e-SRD-*.json")
    imp.add_argument("--db", default=None, help=_DB_HELP)
    imp.set_defaults(func=_import)
    search = actions.add_parser("search", help="search the rules index")
    search.add_argument("query", nargs="+", metavar="WORD", help="what to look for")
    search.add_argument("--limit", type=int, default=5, help="most hits shown (default 5)")
    search.add_argument("--db", default=None, help=_DB_HELP)
    add_json_option(search, "the hits")
    search.set_defaults(func=_search)
    get = actions.add_parser("get", help="show one rules entry by id, e.g. spell:fireball")
    get.add_argument("id", metavar="ID", help="entry id, as rules search shows it")
    get.add_argument("--db", default=None, help=_DB_HELP)
    add_json_option(get, "the entry")
    get.set_defaults(func=_get)

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)


def _db(args: argparse.Namespace, rules_db: str) -> Path:
    """``--db``, else the index the ``rules`` tool reads (``tools.rules_db``)."""
    return Path(args.db or rules_db)


def _import(args: argparse.Namespace) -> int:
    from tools.builtin.rules import SRD_ATTRIBUTION, import_srd

    started = time.perf_counter()
    counts = import_srd(args.path, _db(args, load_config(args).tools.rules_db))
    took = time.perf_counter() - started
    print(
        f"indexed {counts['srd_entries']} SRD entries and {counts['summary_entries']} summary "
        f"entries into {counts['db']} in {took:.1f} s"
    )
    print(SRD_ATTRIBUTION)
    return 0


def _search(args: argparse.Namespace) -> int:
    from campaigns.basics import GlyphoxaError
    from tools.builtin.rules import open_index

    if args.limit < 1:
        raise GlyphoxaError("--limit must be at least 1")
    tools = load_config(args).tools
    index = open_index(tools.srd_path, _db(args, tools.rules_db), save=False)
    try:
        hits = index.search(" ".join(args.query), limit=args.limit)
    finally:
        index.close()
    if args.json:
        print(json.dumps([hit.as_dict() for hit in hits], indent=2, ensure_ascii=False))
        return 0 if hits else 1
    if not hits:
        print("no matching rules")
        return 1
    for hit in hits:
        print(f"{hit.id:40} {hit.name}")
        if hit.snippet:
            print(f"    {hit.snippet.replace(chr(10), ' ')[:160]}")
    return 0


def _get(args: argparse.Namespace) -> int:
    from campaigns.basics import GlyphoxaError
    from tools.builtin.rules import open_index

    tools = load_config(args).tools
    index = open_index(tools.srd_path, _db(args, tools.rules_db), save=False)
    try:
        doc = index.get(args.id)
    finally:
        index.close()
    if doc is None:
        raise GlyphoxaError(
            f"no rules entry {args.id!r}; find one with: glyphoxa rules search WORDS"
        )
    if args.json:
        entry = {
            "id": doc.id,
            "name": doc.name,
            "category": doc.category,
            "source": doc.source,
            "system": doc.system,
            "text": doc.text,
        }
        print(json.dumps(entry, indent=2, ensure_ascii=False))
        return 0
    print(f"{doc.name} ({doc.id}, {doc.source})\n\n{doc.text}")
    return 0
