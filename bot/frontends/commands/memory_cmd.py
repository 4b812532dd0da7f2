"""``glyphoxa memory ...`` and ``glyphoxa recap``: read and maintain the campaign memory.

The database is ``memory.url`` from glyphoxa.yaml; ``--url`` names another, as a URL
(``postgresql+asyncpg://...``, e.g. to import a SQLite backup into PostgreSQL) or as the path
of a SQLite file: ``--url out/memory.db`` reads what a rehearsal recorded (``glyphoxa rehearse``
keeps its memory in its ``--out`` folder). The campaign's ``entities.yaml`` seeds an empty
knowledge graph. Commands that only read never create the database: before the first session
they read an empty in-memory one seeded from ``entities.yaml`` and say so on stderr; a file
named with ``--url`` must exist. ``--json`` prints the same rows as the text output: lists of
objects with the keys the text shows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.frontends.commands._options import (
    Subcommands,
    add_campaign_option,
    add_json_option,
    load_config,
    plain,
)

if TYPE_CHECKING:
    from campaigns.memory import MemoryStore

__all__ = ["ENTITY_TYPES", "register"]

#: The knowledge graph's entity types (``campaigns.content.ENTITY_TYPES``; a test keeps them
#: equal): spelled out here so that building the parser imports no model code.
ENTITY_TYPES = ("player_character", "npc", "location", "faction", "item", "quest")

_URL_HELP = (
    "the database: a URL or a SQLite file's path, e.g. out/memory.db for a rehearsal's "
    "(default: memory.url from the config)"
)


def _memory_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--url", default=default, help=_URL_HELP)
    add_campaign_option(parser, default=default)


def register(sub: Subcommands) -> None:
    memory = sub.add_parser(
        "memory",
        help="search and maintain the campaign memory",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _memory_options(memory, None)
    actions = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    def action(name: str, text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, help=text, description=text)
        _memory_options(parser, argparse.SUPPRESS)
        return parser

    search = action("search", "full-text search over what was said")
    search.add_argument("query", help="words to look for")
    search.add_argument("--session", help="only this session (id or unique prefix)")
    search.add_argument("--limit", type=int, default=10, help="most results shown (default 10)")
    search.add_argument("--facts", action="store_true", help="search chunks and approved facts")
    add_json_option(search, "the hits")
    search.set_defaults(func=_search)

    entities = action("entities", "list knowledge-graph entities")
    entities.add_argument("--type", choices=ENTITY_TYPES, help="only entities of this type")
    entities.add_argument("--name", help="fuzzy name or alias")
    entities.add_argument("--limit", type=int, default=100, help="most shown (default 100)")
    add_json_option(entities, "the entities")
    entities.set_defaults(func=_entities)

    entity = action("entity", "one entity with its relations and facts")
    entity.add_argument("entity_id", metavar="ID", help="entity id (see: glyphoxa memory entities)")
    add_json_option(entity, "the entity")
    entity.set_defaults(func=_entity)

    sessions = action("sessions", "list recorded sessions")
    add_json_option(sessions, "the sessions")
    sessions.set_defaults(func=_sessions)

    _register_proposals(action("proposals", "review the facts NPCs proposed (waiting by default)"))

    export = action("export", "write a JSON backup of the whole memory")
    export.add_argument("file", type=Path, metavar="FILE", help="backup file to write")
    export.set_defaults(func=_export)
    restore = action("import", "merge a JSON backup (all or nothing)")
    restore.add_argument("file", type=Path, metavar="FILE", help="backup file to read")
    restore.set_defaults(func=_import)

    recap = sub.add_parser(
        "recap",
        help="summaries of the last sessions",
        description="Previously on...: the summaries of the last sessions, oldest first.",
    )
    recap.add_argument("--sessions", type=int, default=1, help="how many sessions (default 1)")
    _memory_options(recap, None)
    add_json_option(recap, "the sessions with their summaries")
    recap.set_defaults(func=_recap)


@contextlib.asynccontextmanager
async def _memory(
    args: argparse.Namespace, *, write: bool = False, sessions_hint: bool = False
) -> AsyncIterator[MemoryStore]:
    """The configured store (or ``--url``'s); a read opens no file that does not exist yet.
    ``sessions_hint``: when the store holds no session, say on stderr where a rehearsal's are."""
    from bot.table.assembly.memory import database_url, memory_url_for_reading, open_memory
    from campaigns.basics import GlyphoxaError

    config = load_config(args)
    named = args.url is not None
    url = database_url(args.url) if named else config.memory.url
    missing = None
    if not write:
        url, missing = memory_url_for_reading(url)
    if missing is not None and named:
        raise GlyphoxaError(
            f"{missing}: no such database file (--url); a rehearsal keeps its memory in its "
            f"--out folder, e.g. --url {_rehearsal_memory()}"
        )
    if missing is not None:
        print(
            f"note: {missing} does not exist yet (the first session creates it); "
            "showing only the campaign's entities.yaml",
            file=sys.stderr,
        )
    # Writing commands seed an empty graph as the bot would; reading commands seed only the
    # in-memory stand-in, never a database they merely look at.
    store = await open_memory(config, url=url, summarize=False, seed=write or missing is not None)
    async with store:
        yield store
        if sessions_hint and not await store.list_sessions(limit=1):
            hint = _rehearsal_hint(missing or _sqlite_file(url))
            if hint:
                print(hint, file=sys.stderr)


def _rehearsal_memory() -> Path:
    from bot.table.assembly.memory import REHEARSAL_MEMORY

    return REHEARSAL_MEMORY


def _sqlite_file(url: str) -> Path | None:
    from bot.table.assembly.memory import sqlite_file

    return sqlite_file(url)


def _rehearsal_hint(looked_at: Path | None) -> str | None:
    """Where a rehearsal's sessions are, for a DM who looked in the table's memory: a
    rehearsal records into its own database (``--out``/memory.db), never the table's."""
    rehearsal = _rehearsal_memory()
    if looked_at is not None and looked_at.resolve() == rehearsal.resolve():
        return None
    if rehearsal.is_file():
        return (
            f"a rehearsal's sessions are in its own database: glyphoxa memory sessions "
            f"--url {rehearsal}"
        )
    return (
        "a rehearsal keeps its sessions in its --out folder: glyphoxa memory sessions "
        "--url OUT/memory.db"
    )


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


async def _search(args: argparse.Namespace) -> int:
    async with _memory(args, sessions_hint=not args.facts) as store:
        if args.facts:
            hits = await store.search_facts(args.query, top_k=args.limit)
        else:
            session = await store.resolve_session(args.session) if args.session else None
            hits = await store.search_sessions(args.query, session_id=session, limit=args.limit)
    if args.json:
        _print_json(hits)
        return 0
    if not hits:
        print(f"nothing found for {args.query!r}")
    for hit in hits:
        if args.facts:
            where = f"fact about {hit['entity_id']}" if hit["kind"] == "fact" else "transcript"
            print(f"[{where}, session {(hit['session_id'] or '-')[:8]}]")
            print("  " + hit["text"].replace("\n", "\n  "))
        else:
            who = hit["speaker"] + (
                f" ({hit['npc']})" if hit["npc"] and hit["npc"] != hit["speaker"] else ""
            )
            print(f"{hit['session_id'][:8]} {_when(hit['started_at'])}  {who}: {hit['text']}")
    return 0


async def _entities(args: argparse.Namespace) -> int:
    async with _memory(args) as store:
        found = await store.query_entities(args.name, args.type, limit=args.limit)
    if args.json:
        _print_json(found)
        return 0
    if not found:
        print("no entities match" if args.name or args.type else "no entities yet")
    for item in found:
        aliases = f" (aka {', '.join(item['aliases'])})" if item["aliases"] else ""
        print(f"{item['id']:<24} {item['type']:<17} {item['name']}{aliases}")
    return 0


async def _entity(args: argparse.Namespace) -> int:
    async with _memory(args) as store:
        summary = await store.get_summary(args.entity_id)
    if args.json:
        _print_json(summary)
        return 0
    print(f"{summary['name']} [{summary['type']}] ({summary['id']})")
    if summary["description"]:
        print(f"  {summary['description']}")
    for key, value in summary["attributes"].items():
        print(f"  {key}: {value}")
    for rel in summary["relations"]:
        arrow = f"-{rel['type']}->" if rel["direction"] == "out" else f"<-{rel['type']}-"
        print(f"  {arrow} {rel['entity']['name']} ({rel['entity']['id']})")
    for fact in summary["facts"]:
        print(f"  fact #{fact['id']} (from {fact['npc']}): {fact['text']}")
    return 0


async def _sessions(args: argparse.Namespace) -> int:
    async with _memory(args, sessions_hint=not args.json) as store:
        sessions = await store.list_sessions()
        if not sessions and not args.json:  # before the hint, which says where else to look
            print("no sessions recorded yet", flush=True)
    if args.json:
        _print_json(sessions)
        return 0
    for s in sessions:
        state = "ended" if s["ended_at"] else "open"
        print(f"{s['id'][:8]} {_when(s['started_at'])} {state:<5} {s['utterances']:>6} lines"
              f"  {s['title'] or ''}")  # fmt: skip
    return 0


def _register_proposals(proposals: argparse.ArgumentParser) -> None:
    """``memory proposals`` lists the review queue; its actions decide one proposal."""
    proposals.add_argument(
        "--status",
        choices=["pending", "approved", "rejected", "all"],
        default="pending",
        help="which proposals (default: pending, the ones waiting for you)",
    )
    add_json_option(proposals, "the proposals")
    proposals.set_defaults(func=_proposals)
    verbs = proposals.add_subparsers(dest="proposal_action", metavar="ACTION")
    helps = {
        "approve": "approve a proposal as the NPC worded it: it joins the campaign's facts",
        "edit": "reword a proposal and approve it",
        "reject": "reject a proposal: no NPC will ever see it",
    }
    for verb, text in helps.items():
        decide = verbs.add_parser(verb, help=text, description=text)
        _memory_options(decide, argparse.SUPPRESS)
        decide.add_argument("fact_id", metavar="ID", help="the proposal's number (#7 or 7)")
        if verb == "edit":
            decide.add_argument("text", metavar="TEXT", help="the fact as it should be kept")
        add_json_option(decide, "the decided proposal")
        decide.set_defaults(func=_decide, verb=verb)


def _describe_proposal(fact: dict[str, Any]) -> str:
    """One proposal as the DM reads it: number, state, who, about what, and the fact."""
    state = fact["status"] + (f" by {fact['decided_by']}" if fact.get("decided_by") else "")
    about = ""
    if fact["entity_id"]:
        about = f" about {fact.get('entity_name') or fact['entity_id']} ({fact['entity_id']})"
    session = f", session {fact['session_id'][:8]}" if fact["session_id"] else ""
    line = f"#{fact['id']} [{state}] {fact['npc']}{about}{session}: {fact['text']}"
    if fact.get("original_text"):
        line += f"\n    (edited; {fact['npc']} proposed: {fact['original_text']})"
    return line


async def _proposals(args: argparse.Namespace) -> int:
    status = None if args.status == "all" else args.status
    async with _memory(args) as store:
        facts = await store.list_facts(status)
    if args.json:
        _print_json(facts)
        return 0
    if not facts:
        print("no proposals waiting" if status == "pending" else f"no {status or ''} proposals")
        return 0
    for fact in facts:
        print(_describe_proposal(fact))
    if status == "pending":
        print(
            "\ndecide with: glyphoxa memory proposals approve ID | edit ID TEXT | reject ID",
            file=sys.stderr,
        )
    return 0


async def _decide(args: argparse.Namespace) -> int:
    async with _memory(args, write=True) as store:
        if args.verb == "reject":
            fact = await store.reject_fact(args.fact_id, by="command line")
        else:
            text = args.text if args.verb == "edit" else None
            fact = await store.approve_fact(args.fact_id, text=text, by="command line")
        await store.wait_idle()
    if args.json:
        _print_json(fact)
        return 0
    done = {"approve": "approved", "edit": "edited and approved", "reject": "rejected"}
    print(f"proposal #{fact['id']} {done[args.verb]}")
    print(_describe_proposal(fact))
    return 0


async def _export(args: argparse.Namespace) -> int:
    async with _memory(args) as store:
        counts = await store.export_json(args.file)
    print(f"wrote {args.file}: " + ", ".join(f"{n} {table}" for table, n in counts.items()))
    return 0


async def _import(args: argparse.Namespace) -> int:
    from campaigns.basics import GlyphoxaError

    if not args.file.is_file():
        raise GlyphoxaError(f"{args.file}: no such file")
    async with _memory(args, write=True) as store:
        report = await store.import_json(args.file)
        await store.wait_idle()
    print(f"imported {args.file}: {report.describe()}")
    return 0


async def _recap(args: argparse.Namespace) -> int:
    from campaigns.basics import GlyphoxaError

    if args.sessions < 1:
        raise GlyphoxaError("--sessions must be at least 1")
    async with _memory(args, sessions_hint=not args.json) as store:
        if not args.json:
            print(await store.recap(args.sessions), flush=True)
            return 0
        recent = await store.list_sessions(limit=args.sessions)
        summaries = [await store.session_summary(item["id"]) for item in reversed(recent)]
    _print_json({"sessions": summaries})
    return 0
