"""SQLAlchemy 2 tables of the campaign memory.

L1 transcripts (``sessions``, ``utterances``), L2 recall (``chunks``: 3-6 utterances or one approved
fact, optionally embedded), L3 knowledge graph (``entities``, ``relations``, ``proposed_facts``),
``summaries`` and the tool tables. Times are POSIX seconds as floats so the same values round-trip
through SQLite, PostgreSQL and the JSON backup unchanged.

The full-text machinery (FTS5 tables and triggers on SQLite, generated ``tsv`` columns and GIN
indexes on PostgreSQL) is dialect-specific and created by the Alembic migration, not declared here.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "FACT_STATUSES",
    "Base",
    "CharacterBinding",
    "Chunk",
    "Entity",
    "OpenTable",
    "ProposedFact",
    "Relation",
    "Session",
    "SessionUsage",
    "Summary",
    "ToolCalibration",
    "ToolInvocation",
    "Utterance",
    "table_of",
]

#: Life cycle of knowledge an NPC proposes: it waits for the DM.
FACT_STATUSES = ("pending", "approved", "rejected")


class Base(DeclarativeBase):
    pass


class Session(Base):
    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    campaign: Mapped[str] = mapped_column(String(200), index=True)
    title: Mapped[str | None] = mapped_column(String(300))
    started_at: Mapped[float] = mapped_column(Float, index=True)
    ended_at: Mapped[float | None] = mapped_column(Float)


class Utterance(Base):
    __tablename__ = "utterances"
    __table_args__ = (Index("ix_utterances_session_started", "session_id", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    speaker: Mapped[str] = mapped_column(String(200))
    npc: Mapped[str | None] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    started_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float] = mapped_column(Float)
    tier: Mapped[str | None] = mapped_column(String(20))
    interrupted: Mapped[bool] = mapped_column(Boolean, default=False)
    chunk_id: Mapped[int | None] = mapped_column(Integer, index=True)
    """The L2 chunk this utterance was folded into; NULL while it waits for its chunk."""
    stages: Mapped[dict[str, float | None] | None] = mapped_column(JSON, nullable=True)
    """An NPC line: milliseconds of each stage of the turn that spoke it (its latency)."""


class Chunk(Base):
    __tablename__ = "chunks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(20))
    """``transcript`` (3-6 utterances), ``fact`` (an approved proposed fact) or ``entity`` (a
    seeded entity's description)."""
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    entity_id: Mapped[str | None] = mapped_column(String(100), index=True)
    first_utterance_id: Mapped[int | None] = mapped_column(Integer)
    last_utterance_id: Mapped[int | None] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)
    """float32 little-endian vector; NULL until the embeddings endpoint answered."""
    embedding_model: Mapped[str | None] = mapped_column(String(200))
    embedded_at: Mapped[float | None] = mapped_column(Float, index=True)


class Entity(Base):
    __tablename__ = "entities"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    name: Mapped[str] = mapped_column(String(300))
    type: Mapped[str] = mapped_column(String(40), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    aliases: Mapped[list[str]] = mapped_column(JSON, default=list)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    search_names: Mapped[str] = mapped_column(Text, default="")
    """Lower-cased name and aliases joined by ``|``: what fuzzy lookup matches against."""
    updated_at: Mapped[float] = mapped_column(Float)


class Relation(Base):
    __tablename__ = "relations"
    __table_args__ = (UniqueConstraint("source_id", "type", "target_id", name="uq_relation"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source_id: Mapped[str] = mapped_column(
        ForeignKey("entities.id", ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(100))
    target_id: Mapped[str] = mapped_column(
        ForeignKey("entities.id", ondelete="CASCADE"), index=True
    )
    description: Mapped[str] = mapped_column(Text, default="")


class ProposedFact(Base):
    """Knowledge an NPC proposed (``propose_memory``): it waits for the DM's review and joins the
    campaign's facts (a ``fact`` chunk, the entity's summary) only when approved."""

    __tablename__ = "proposed_facts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    npc: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    entity_id: Mapped[str | None] = mapped_column(String(100), index=True)
    session_id: Mapped[str | None] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(20), index=True, default="pending")
    proposed_at: Mapped[float] = mapped_column(Float)
    decided_at: Mapped[float | None] = mapped_column(Float)
    original_text: Mapped[str | None] = mapped_column(Text)
    """The NPC's own words when the DM edited the fact before approving it."""
    decided_by: Mapped[str | None] = mapped_column(String(200))
    """Who approved or rejected it (``Dana (Discord)``, ``command line``)."""


class Summary(Base):
    __tablename__ = "summaries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), unique=True
    )
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(40))
    """``llm``, ``extractive`` or ``dm`` (passed to ``end_session``)."""
    created_at: Mapped[float] = mapped_column(Float)


class ToolInvocation(Base):
    __tablename__ = "tool_invocations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str | None] = mapped_column(String(36), index=True)
    npc: Mapped[str] = mapped_column(String(200))
    tool: Mapped[str] = mapped_column(String(200), index=True)
    tier: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    duration_ms: Mapped[float] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)
    approval: Mapped[str | None] = mapped_column(String(200))
    """The DM's decision on a call that needed approval (``approved by Dana``, ``timeout``)."""


class ToolCalibration(Base):
    __tablename__ = "tool_calibration"
    __table_args__ = (UniqueConstraint("environment", "tool", name="uq_calibration"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    environment: Mapped[str] = mapped_column(String(200))
    tool: Mapped[str] = mapped_column(String(200))
    samples: Mapped[list[list[Any]]] = mapped_column(JSON, default=list)
    """``[[duration_ms, ok], ...]``, oldest first (the host's rolling window)."""
    updated_at: Mapped[float] = mapped_column(Float)


class OpenTable(Base):
    """A table running in a Discord guild: what a restarted or replaced process needs to resume
    it (voice channel, campaign, the DM's overrides and mutes, the scene). The row exists from
    ``/session start`` to ``/session stop``; which process runs it is a claim (an advisory lock
    on PostgreSQL), not a column, so a crashed process never leaves a stale owner behind."""

    __tablename__ = "open_tables"

    guild_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    voice_channel_id: Mapped[int] = mapped_column(BigInteger)
    text_channel_id: Mapped[int | None] = mapped_column(BigInteger)
    """Where the DM started the session: alerts and the "resumed" notice go there."""
    campaign: Mapped[str | None] = mapped_column(String(500))
    """The campaign folder given to ``/session start`` (NULL: the configured one)."""
    memory_session_id: Mapped[str | None] = mapped_column(String(36))
    """The campaign-memory session the transcript continues in after a resume."""
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """Scene lines, mutes and tier overrides (``bot.table.session.snapshot.TableState``)."""
    owner: Mapped[str | None] = mapped_column(String(200))
    """host:pid of the process that last ran it (for people reading the table, not for locking)."""
    opened_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class CharacterBinding(Base):
    """A player bound to their character at the table (``/iam``): kept for the campaign, so
    the next session knows who plays whom. ``campaign.yaml``'s ``characters:`` are not stored
    here; a row overrides them for its player."""

    __tablename__ = "character_bindings"
    __table_args__ = (UniqueConstraint("campaign", "user_id", name="uq_character_binding"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    campaign: Mapped[str] = mapped_column(String(200))
    user_id: Mapped[str] = mapped_column(String(40))
    """The player's Discord user id (a rehearsal's speaker id)."""
    character: Mapped[str] = mapped_column(String(200))
    bound_by: Mapped[str | None] = mapped_column(String(200))
    """Who made the binding (the player, or the DM by name)."""
    updated_at: Mapped[float] = mapped_column(Float)


class SessionUsage(Base):
    """What a session used of one model for one NPC (``npc`` empty: the players' speech
    recognition), and what that cost when it was used; a resumed session continues it."""

    __tablename__ = "session_usage"
    __table_args__ = (UniqueConstraint("session_id", "service", "model", "npc", name="uq_usage"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    service: Mapped[str] = mapped_column(String(20))
    """``llm``, ``realtime``, ``tts`` or ``stt``."""
    model: Mapped[str] = mapped_column(String(200))
    npc: Mapped[str] = mapped_column(String(200))
    calls: Mapped[int] = mapped_column(Integer)
    estimated_calls: Mapped[int] = mapped_column(Integer)
    """Calls whose provider reported no usage: their counts are estimated from text."""
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
    audio_input_tokens: Mapped[int] = mapped_column(BigInteger)
    audio_output_tokens: Mapped[int] = mapped_column(BigInteger)
    characters: Mapped[int] = mapped_column(BigInteger)
    audio_seconds: Mapped[float] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


def table_of(model: type[Base]) -> Table:
    """The Core ``Table`` of a mapped class (typed, unlike ``__table__``)."""
    return cast(Table, model.__table__)
