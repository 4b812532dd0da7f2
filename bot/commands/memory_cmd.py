"""``glyphoxa memory ...`` and ``glyphoxa recap``: read and maintain the campaign memory.

The database URL comes from ``memory.url`` in glyphoxa.yaml (``--url`` overrides it, e.g. to import
a SQLite backup into PostgreSQL). On first open the campaign's ``entities.yaml`` seeds the
knowledge graph.
"""

from __future__ import annotations

import argparse
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaigns.content import ENTITY_TYPES, EntitiesFile
from campaigns.errors import GlyphoxaError
from campaigns.memory import LlmSummarizer, MemoryStore, OpenAIEmbeddings
from campaigns.yamlio import load_model

__all__ = ["open_memory", "register"]

log = logging.getLogger(__name__)


def _load_config(path: str | None) -> Any:
    from bot.config_loader import load_config

    return load_config(path)


async def open_memory(
    config: Any, *, url: str | None = None, summarize: bool = True
) -> MemoryStore:
    """Open the configured memory and seed an empty knowledge graph from ``entities.yaml``.

    ``config`` is a ``GlyphoxaConfig``. Embeddings come from ``providers.embeddings``; session
    summaries use ``providers.llm`` when it is an OpenAI-compatible endpoint (``name: openai`` or a
    ``base_url``); the bundled local model needs its server running, so pass an ``LlmSummarizer``
    to ``MemoryStore.open`` yourself in that case. The table session can use this too, so the bot
    and the CLI see the same database the same way.
    """
    embeddings = None
    provider = config.providers.embeddings
    if provider is not None:
        embeddings = OpenAIEmbeddings(
            model=provider.model or "text-embedding-3-small",
            base_url=provider.base_url,
            api_key=provider.api_key.get_secret_value() if provider.api_key else None,
        )
    summarizer = None
    llm = config.providers.llm
    if summarize and (llm.name == "openai" or llm.base_url):
        summarizer = LlmSummarizer.create(
            model=llm.model or "gpt-4o-mini",
            base_url=llm.base_url,
            api_key=llm.api_key.get_secret_value() if llm.api_key else None,
        )
    try:
        store = await MemoryStore.open(
            url or config.memory.url,
            embeddings=embeddings,
            summarizer=summarizer,
            chunk_utterances=config.memory.chunk_utterances,
            close_helpers=True,
        )
    except BaseException:
        for helper in (embeddings, summarizer):
            if helper is not None:
                await helper.aclose()
        raise
    try:
        entities_file = Path(config.campaign.path) / "entities.yaml"
        if entities_file.is_file() and not await store.query_entities():
            entities = load_model(entities_file, EntitiesFile, allow_empty=True).unwrap()
            count, relations = await store.seed_entities(entities)
            log.info("seeded %d entities and %d relations from %s", count, relations, entities_file)
    except BaseException:
        await store.close()
        raise
    return store


def register(sub: Any) -> None:
    memory = sub.add_parser("memory", help="search and maintain the campaign memory")
    memory.add_argument("--url", help="database URL (default: memory.url from the config)")
    actions = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    search = actions.add_parser("search", help="full-text search over what was said")
    search.add_argument("query")
    search.add_argument("--session", help="only this session (id or unique prefix)")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--facts", action="store_true", help="search chunks and approved facts")
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=_search)

    entities = actions.add_parser("entities", help="list knowledge-graph entities")
    entities.add_argument("--type", choices=ENTITY_TYPES)
    entities.add_argument("--name", help="fuzzy name or alias")
    entities.add_argument("--limit", type=int, default=100)
    entities.add_argument("--json", action="store_true")
    entities.set_defaults(func=_entities)

    entity = actions.add_parser("entity", help="one entity with its relations and facts")
    entity.add_argument("entity_id")
    entity.set_defaults(func=_entity)

    sessions = actions.add_parser("sessions", help="list recorded sessions")
    sessions.add_argument("--json", action="store_true")
    sessions.set_defaults(func=_sessions)

    facts = actions.add_parser("facts", help="knowledge NPCs proposed (pending by default)")
    facts.add_argument("--status", choices=["pending", "approved", "rejected", "all"])
    facts.set_defaults(func=_facts)
    for verb in ("approve", "reject"):
        decide = actions.add_parser(verb, help=f"{verb} a proposed fact")
        decide.add_argument("fact_id", type=int)
        decide.set_defaults(func=_decide, verb=verb)

    export = actions.add_parser("export", help="write a JSON backup of the whole memory")
    export.add_argument("file", type=Path)
    export.set_defaults(func=_export)
    restore = actions.add_parser("import", help="merge a JSON backup (all or nothing)")
    restore.add_argument("file", type=Path)
    restore.set_defaults(func=_import)

    recap = sub.add_parser("recap", help="summaries of the last sessions")
    recap.add_argument("--sessions", type=int, default=1, help="how many sessions (default 1)")
    recap.add_argument("--url", help="database URL (default: memory.url from the config)")
    recap.set_defaults(func=_recap)


async def _open(args: argparse.Namespace) -> MemoryStore:
    return await open_memory(_load_config(args.config), url=args.url, summarize=False)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


async def _search(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        if args.facts:
            hits = await store.search_facts(args.query, top_k=args.limit)
        else:
            session = await store.resolve_session(args.session) if args.session else None
            hits = await store.search_sessions(args.query, session_id=session, limit=args.limit)
    if args.json:
        _print_json(hits)
    elif not hits:
        print(f"nothing found for {args.query!r}")
    for hit in [] if args.json else hits:
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
    async with await _open(args) as store:
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
    async with await _open(args) as store:
        summary = await store.get_summary(args.entity_id)
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
    async with await _open(args) as store:
        sessions = await store.list_sessions()
    if args.json:
        _print_json(sessions)
        return 0
    if not sessions:
        print("no sessions recorded yet")
    for s in sessions:
        state = "ended" if s["ended_at"] else "open"
        print(f"{s['id'][:8]} {_when(s['started_at'])} {state:<5} {s['utterances']:>6} lines"
              f"  {s['title'] or ''}")  # fmt: skip
    return 0


async def _facts(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        status = None if args.status == "all" else (args.status or "pending")
        facts = await store.list_facts(status)
    if not facts:
        print(f"no {status or ''} facts".replace("  ", " "))
    for fact in facts:
        about = f" about {fact['entity_id']}" if fact["entity_id"] else ""
        print(f"#{fact['id']} [{fact['status']}] {fact['npc']}{about}: {fact['text']}")
    return 0


async def _decide(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        if args.verb == "approve":
            await store.approve_fact(args.fact_id)
        else:
            await store.reject_fact(args.fact_id)
        await store.wait_idle()
    print(f"fact #{args.fact_id} {args.verb}d")
    return 0


async def _export(args: argparse.Namespace) -> int:
    async with await _open(args) as store:
        counts = await store.export_json(args.file)
    print(f"wrote {args.file}: " + ", ".join(f"{n} {table}" for table, n in counts.items()))
    return 0


async def _import(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        raise GlyphoxaError(f"{args.file}: no such file")
    async with await _open(args) as store:
        report = await store.import_json(args.file)
        await store.wait_idle()
    print(f"imported {args.file}: {report.describe()}")
    return 0


async def _recap(args: argparse.Namespace) -> int:
    if args.sessions < 1:
        raise GlyphoxaError("--sessions must be at least 1")
    async with await _open(args) as store:
        print(await store.recap(args.sessions))
    return 0
