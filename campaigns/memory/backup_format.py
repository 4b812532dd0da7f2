"""The memory backup file: its validated row models, and reading one with every problem named.

A backup is one JSON document (``format``, ``version``, ``exported_at``, ``tables``); each table
is a list of rows whose fields are the database columns. ``load_backup`` refuses a file that is
not valid JSON, not a Glyphoxa backup, fails the models or refers to rows it does not contain.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from campaigns.basics import GlyphoxaError
from campaigns.content import ENTITY_TYPES

__all__ = ["FORMAT", "VERSION", "Backup", "ChunkRow", "Tables", "load_backup"]

FORMAT = "glyphoxa-memory"
VERSION = 1


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class SessionRow(_Row):
    id: str = Field(min_length=1, max_length=36)
    campaign: str
    title: str | None = None
    started_at: float
    ended_at: float | None = None


class UtteranceRow(_Row):
    id: int
    session_id: str
    speaker: str
    npc: str | None = None
    text: str
    started_at: float
    ended_at: float
    tier: str | None = None
    interrupted: bool = False
    chunk_id: int | None = None
    stages: dict[str, float | None] | None = None


class ChunkRow(_Row):
    id: int
    kind: Literal["transcript", "fact", "entity"]
    session_id: str | None = None
    entity_id: str | None = None
    first_utterance_id: int | None = None
    last_utterance_id: int | None = None
    text: str
    created_at: float
    embedding: str | None = None
    """base64 of little-endian float32."""
    embedding_model: str | None = None
    embedded_at: float | None = None


class EntityRow(_Row):
    id: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1)
    type: Literal[ENTITY_TYPES]  # type: ignore[valid-type]
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)


class RelationRow(_Row):
    source_id: str
    type: str = Field(min_length=1)
    target_id: str
    description: str = ""


class FactRow(_Row):
    id: int
    npc: str
    text: str
    entity_id: str | None = None
    session_id: str | None = None
    status: Literal["pending", "approved", "rejected"]
    proposed_at: float
    decided_at: float | None = None
    original_text: str | None = None
    decided_by: str | None = None


class SummaryRow(_Row):
    session_id: str
    text: str
    source: str
    created_at: float


class InvocationRow(_Row):
    session_id: str | None = None
    npc: str
    tool: str
    tier: str
    status: str
    duration_ms: float
    created_at: float
    approval: str | None = None


class CalibrationRow(_Row):
    environment: str
    tool: str
    samples: list[tuple[float, bool]]
    updated_at: float


class CharacterBindingRow(_Row):
    campaign: str
    user_id: str = Field(min_length=1, max_length=40)
    character: str = Field(min_length=1, max_length=200)
    bound_by: str | None = None
    updated_at: float


class Tables(_Row):
    sessions: list[SessionRow] = Field(default_factory=list)
    utterances: list[UtteranceRow] = Field(default_factory=list)
    chunks: list[ChunkRow] = Field(default_factory=list)
    entities: list[EntityRow] = Field(default_factory=list)
    relations: list[RelationRow] = Field(default_factory=list)
    proposed_facts: list[FactRow] = Field(default_factory=list)
    summaries: list[SummaryRow] = Field(default_factory=list)
    tool_invocations: list[InvocationRow] = Field(default_factory=list)
    tool_calibration: list[CalibrationRow] = Field(default_factory=list)
    character_bindings: list[CharacterBindingRow] = Field(default_factory=list)
    """Who plays whom per campaign (absent from backups made before characters existed)."""


class Backup(_Row):
    format: Literal["glyphoxa-memory"]
    version: Literal[1]
    exported_at: float
    tables: Tables


def load_backup(path: Path) -> Backup:
    """Parse and validate a backup file; a GlyphoxaError says exactly what is wrong."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GlyphoxaError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise GlyphoxaError(f"{path}: cannot read backup: {error}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise GlyphoxaError(
            f"{path}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GlyphoxaError(f"{path}: not a Glyphoxa memory backup (format must be {FORMAT!r})")
    try:
        backup = Backup.model_validate(data)
    except ValidationError as error:
        details = "; ".join(
            f"{_location(e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)[:5]
        )
        more = f" (and {error.error_count() - 5} more)" if error.error_count() > 5 else ""
        raise GlyphoxaError(f"{path}: invalid backup: {details}{more}") from None
    _check_references(path, backup.tables)
    return backup


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _check_references(path: Path, tables: Tables) -> None:
    def refuse(message: str) -> None:
        raise GlyphoxaError(f"{path}: invalid backup: {message}")

    for name in ("sessions", "utterances", "chunks", "entities", "proposed_facts"):
        ids = [row.id for row in getattr(tables, name)]
        if len(ids) != len(set(ids)):
            refuse(f"tables.{name} has duplicate ids")
    sessions = {s.id for s in tables.sessions}
    utterances = {u.id for u in tables.utterances}
    chunks = {c.id for c in tables.chunks}
    for i, u in enumerate(tables.utterances):
        if u.session_id not in sessions:
            refuse(f"tables.utterances[{i}].session_id {u.session_id!r} is not in tables.sessions")
        if u.chunk_id is not None and u.chunk_id not in chunks:
            refuse(f"tables.utterances[{i}].chunk_id {u.chunk_id} is not in tables.chunks")
    for i, c in enumerate(tables.chunks):
        if c.session_id is not None and c.session_id not in sessions:
            refuse(f"tables.chunks[{i}].session_id {c.session_id!r} is not in tables.sessions")
        for ref in (c.first_utterance_id, c.last_utterance_id):
            if ref is not None and ref not in utterances:
                refuse(f"tables.chunks[{i}] refers to utterance {ref}, not in tables.utterances")
        if c.embedding is not None:
            try:
                base64.b64decode(c.embedding, validate=True)
            except ValueError:
                refuse(f"tables.chunks[{i}].embedding is not base64")
    for i, s in enumerate(tables.summaries):
        if s.session_id not in sessions:
            refuse(f"tables.summaries[{i}].session_id {s.session_id!r} is not in tables.sessions")
