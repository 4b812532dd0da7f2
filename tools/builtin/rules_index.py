"""Full-text index of rules text: SQLite FTS5 with BM25, name boosts and spoken-query tolerance.

Spoken queries are messy: "fire ball", "grapple", "what does prone do". The index stores each
entry's name three ways (words, words run together, aliases) and a query is matched as prefix
terms (porter-stemmed, so "grapple" reaches "grappled") plus adjacent words joined ("fire ball"
-> "fireball"). Candidates from BM25 are re-ranked so an entry whose name the query names wins.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import re
import sqlite3
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "RuleDoc", "RuleHit", "RulesIndex", "compact", "query_words"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"

_STOPWORDS = frozenset(
    """a an and are as at be can could do does for from have how i if in is it me my of on or
    please rule rules say says tell that the there this to what whats when where which who why
    with work works you your about explain""".split()
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    system TEXT NOT NULL,
    source TEXT NOT NULL,
    aliases TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    name, compact, aliases, body,
    tokenize = 'porter unicode61 remove_diacritics 2',
    prefix = '2 3'
);
"""

#: BM25 weights of the FTS columns name, compact, aliases, body.
_WEIGHTS = (10.0, 12.0, 6.0, 1.0)
_CANDIDATES = 150


@dataclass(frozen=True, slots=True)
class RuleDoc:
    """One searchable rules entry; ``id`` is category-prefixed (``spell:fireball``)."""

    id: str
    name: str
    category: str
    text: str
    system: str = "dnd5e"
    source: str = "summary"
    aliases: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class RuleHit:
    id: str
    name: str
    category: str
    source: str
    snippet: str
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "source": self.source,
            "snippet": self.snippet,
        }


def compact(text: str) -> str:
    """Lower-case letters and digits only: ``"Fire Ball"`` -> ``"fireball"``."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def query_words(query: str) -> list[str]:
    """Query words without filler ("what does prone do" -> ``["prone"]``)."""
    words = re.findall(r"[a-z0-9]+", query.lower().replace("'", ""))
    kept = [w for w in words if w not in _STOPWORDS]
    return kept or words


def _similar(word: str, token: str) -> bool:
    if token.startswith(word) or word.startswith(token):
        return True
    common = 0
    for a, b in zip(word, token, strict=False):
        if a != b:
            break
        common += 1
    return common >= max(4, len(word) - 2)


class RulesIndex:
    """An FTS5 index in an SQLite database (in memory, or loaded from a cache file).

    Thread-safe for the way the tools use it: writes happen while building, queries after.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        self._lock = threading.Lock()
        self._names: dict[str, list[int]] | None = None
        self._db.executescript(_SCHEMA)

    @classmethod
    def in_memory(cls) -> RulesIndex:
        return cls(sqlite3.connect(":memory:", check_same_thread=False))

    @classmethod
    def load(cls, path: Path) -> RulesIndex:
        """Copy a cache file into memory (queries then never touch the disk)."""
        source = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            memory = sqlite3.connect(":memory:", check_same_thread=False)
            source.backup(memory)
        finally:
            source.close()
        return cls(memory)

    def save(self, path: Path) -> None:
        """Write the index to ``path`` atomically (temp file in the same folder, then rename)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".db", dir=path.parent)
        os.close(fd)
        try:
            target = sqlite3.connect(tmp)
            try:
                with self._lock:
                    self._db.backup(target)
            finally:
                target.close()
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        self._db.close()

    # -- metadata ------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- writing -------------------------------------------------------------------------------
    def add(self, docs: Iterable[RuleDoc]) -> int:
        """Insert or replace entries; returns how many were written."""
        count = 0
        self._names = None
        with self._lock, self._db:
            for doc in docs:
                row = self._db.execute("SELECT rowid FROM docs WHERE id = ?", (doc.id,)).fetchone()
                if row is not None:
                    self._db.execute("DELETE FROM docs WHERE rowid = ?", row)
                    self._db.execute("DELETE FROM docs_fts WHERE rowid = ?", row)
                cursor = self._db.execute(
                    "INSERT INTO docs (id, name, category, system, source, aliases, text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        doc.id,
                        doc.name,
                        doc.category,
                        doc.system,
                        doc.source,
                        "\n".join(doc.aliases),
                        doc.text,
                    ),
                )
                compacts = " ".join(compact(n) for n in (doc.name, *doc.aliases))
                self._db.execute(
                    "INSERT INTO docs_fts (rowid, name, compact, aliases, body) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (cursor.lastrowid, doc.name, compacts, " ; ".join(doc.aliases), doc.text),
                )
                count += 1
        return count

    # -- reading -------------------------------------------------------------------------------
    def count(self, source: str | None = None) -> int:
        if source is None:
            return int(self._db.execute("SELECT count(*) FROM docs").fetchone()[0])
        sql = "SELECT count(*) FROM docs WHERE source = ?"
        return int(self._db.execute(sql, (source,)).fetchone()[0])

    def systems(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT system FROM docs ORDER BY 1")]

    def categories(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT category FROM docs ORDER BY 1")]

    def get(self, doc_id: str) -> RuleDoc | None:
        row = self._db.execute(
            "SELECT id, name, category, text, system, source, aliases FROM docs WHERE id = ?",
            (doc_id,),
        ).fetchone()
        if row is None:
            return None
        aliases = tuple(a for a in row[6].split("\n") if a)
        return RuleDoc(row[0], row[1], row[2], row[3], row[4], row[5], aliases)

    def fingerprint(self) -> str:
        """Hash of every id and text, to tell whether a cache matches its sources."""
        digest = hashlib.sha256()
        for doc_id, text in self._db.execute("SELECT id, text FROM docs ORDER BY id"):
            digest.update(doc_id.encode())
            digest.update(text.encode())
        return digest.hexdigest()

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        system: str | None = None,
        category: str | None = None,
    ) -> list[RuleHit]:
        """Best entries for a (possibly spoken) query, best first."""
        words = query_words(query)
        if not words:
            return []
        match = self._match_expression(words)
        filters = ""
        params: list[Any] = [match]
        if system is not None:
            filters += " AND d.system = ?"
            params.append(system)
        if category is not None:
            filters += " AND d.category = ?"
            params.append(category)
        sql = (
            "SELECT d.rowid, d.id, d.name, d.category, d.source, d.aliases, "
            f"bm25(docs_fts, {', '.join(str(w) for w in _WEIGHTS)}) AS score "
            "FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid "
            f"WHERE docs_fts MATCH ?{filters} ORDER BY score LIMIT {_CANDIDATES}"
        )
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        query_compact = "".join(words)
        if not rows:
            return self._fuzzy(query_compact, limit, system, category)
        ranked = []
        for rowid, doc_id, name, cat, source, aliases, score in rows:
            names = [name, *(a for a in aliases.split("\n") if a)]
            exact = any(compact(n) == query_compact for n in names)
            tokens = [t for n in names for t in re.findall(r"[a-z0-9]+", n.lower())]
            covered = all(any(_similar(w, t) for t in tokens) for w in words)
            key = (not exact, not covered, score, len(name))
            ranked.append((key, rowid, (doc_id, name, cat, source, -score)))
        ranked.sort(key=lambda item: item[0])
        top = ranked[:limit]
        snippets = self._snippets(match, [rowid for _, rowid, _ in top])
        return [
            RuleHit(d[0], d[1], d[2], d[3], snippets.get(rowid, ""), d[4]) for _, rowid, d in top
        ]

    def _fuzzy(
        self, query_compact: str, limit: int, system: str | None, category: str | None
    ) -> list[RuleHit]:
        """Names spelt like the query, for misheard words ("fireboll"); only when FTS found
        nothing, so the common path stays fast."""
        if len(query_compact) < 4:
            return []
        if self._names is None:
            self._names = {}
            for rowid, name in self._db.execute("SELECT rowid, name FROM docs"):
                self._names.setdefault(compact(name), []).append(rowid)
        close = difflib.get_close_matches(query_compact, list(self._names), n=limit * 2, cutoff=0.8)
        rowids = [rowid for key in close for rowid in self._names[key]]
        hits: list[RuleHit] = []
        for rowid in rowids:
            row = self._db.execute(
                "SELECT id, name, category, system, source, substr(text, 1, 160) FROM docs "
                "WHERE rowid = ?",
                (rowid,),
            ).fetchone()
            if row is None or (system and row[3] != system) or (category and row[2] != category):
                continue
            ratio = difflib.SequenceMatcher(None, query_compact, compact(row[1])).ratio()
            hits.append(RuleHit(row[0], row[1], row[2], row[4], row[5], ratio))
        return hits[:limit]

    def _snippets(self, match: str, rowids: list[int]) -> dict[int, str]:
        """Snippets only for the hits returned (snippet() is the costly part of a query)."""
        if not rowids:
            return {}
        marks = ", ".join("?" for _ in rowids)
        sql = (
            "SELECT rowid, snippet(docs_fts, 3, '', '', ' ... ', 24) FROM docs_fts "
            f"WHERE docs_fts MATCH ? AND rowid IN ({marks})"
        )
        with self._lock:
            rows = self._db.execute(sql, [match, *rowids]).fetchall()
        return {rowid: text.strip() for rowid, text in rows}

    @staticmethod
    def _match_expression(words: list[str]) -> str:
        terms = [f'"{w}"*' if len(w) >= 3 else f'"{w}"' for w in words]
        joined = {"".join(words[i : i + n]) for n in (2, 3) for i in range(len(words) - n + 1)}
        joined.add("".join(words))
        terms += [f'compact : "{j}"*' for j in sorted(joined) if len(j) >= 3]
        return " OR ".join(terms)
