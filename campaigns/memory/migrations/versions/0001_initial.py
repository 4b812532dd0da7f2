"""Initial schema: transcripts, chunks, knowledge graph, summaries, tool tables, full-text search.

Revision ID: 0001
Revises:
Create Date: 2026-11-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

#: Tables with full-text search over their ``text`` column.
FTS_TABLES = ("utterances", "chunks", "summaries")


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("campaign", sa.String(200), nullable=False),
        sa.Column("title", sa.String(300)),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
    )
    op.create_index("ix_sessions_campaign", "sessions", ["campaign"])
    op.create_index("ix_sessions_started_at", "sessions", ["started_at"])
    op.create_table(
        "utterances",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "session_id",
            sa.String(36),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("speaker", sa.String(200), nullable=False),
        sa.Column("npc", sa.String(200)),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float, nullable=False),
        sa.Column("tier", sa.String(20)),
        sa.Column("interrupted", sa.Boolean, nullable=False),
        sa.Column("chunk_id", sa.Integer),
    )
    op.create_index("ix_utterances_session_started", "utterances", ["session_id", "started_at"])
    op.create_index("ix_utterances_chunk_id", "utterances", ["chunk_id"])
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("session_id", sa.String(36), sa.ForeignKey("sessions.id", ondelete="CASCADE")),
        sa.Column("entity_id", sa.String(100)),
        sa.Column("first_utterance_id", sa.Integer),
        sa.Column("last_utterance_id", sa.Integer),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("embedding", sa.LargeBinary),
        sa.Column("embedding_model", sa.String(200)),
        sa.Column("embedded_at", sa.Float),
    )
    op.create_index("ix_chunks_session_id", "chunks", ["session_id"])
    op.create_index("ix_chunks_entity_id", "chunks", ["entity_id"])
    op.create_index("ix_chunks_embedded_at", "chunks", ["embedded_at"])
    op.create_table(
        "entities",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("attributes", sa.JSON, nullable=False),
        sa.Column("search_names", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_entities_type", "entities", ["type"])
    op.create_table(
        "relations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "source_id",
            sa.String(100),
            sa.ForeignKey("entities.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column(
            "target_id",
            sa.String(100),
            sa.ForeignKey("entities.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("description", sa.Text, nullable=False),
        sa.UniqueConstraint("source_id", "type", "target_id", name="uq_relation"),
    )
    op.create_index("ix_relations_source_id", "relations", ["source_id"])
    op.create_index("ix_relations_target_id", "relations", ["target_id"])
    op.create_table(
        "proposed_facts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("npc", sa.String(200), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("entity_id", sa.String(100)),
        sa.Column("session_id", sa.String(36)),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("proposed_at", sa.Float, nullable=False),
        sa.Column("decided_at", sa.Float),
    )
    op.create_index("ix_proposed_facts_entity_id", "proposed_facts", ["entity_id"])
    op.create_index("ix_proposed_facts_status", "proposed_facts", ["status"])
    op.create_table(
        "summaries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "session_id",
            sa.String(36),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
            unique=True,
        ),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "tool_invocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(36)),
        sa.Column("npc", sa.String(200), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("tier", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("duration_ms", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_tool_invocations_session_id", "tool_invocations", ["session_id"])
    op.create_index("ix_tool_invocations_tool", "tool_invocations", ["tool"])
    op.create_table(
        "tool_calibration",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("environment", sa.String(200), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("samples", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint("environment", "tool", name="uq_calibration"),
    )
    dialect = op.get_bind().dialect.name
    for table in FTS_TABLES:
        if dialect == "sqlite":
            _create_fts5(table)
        elif dialect == "postgresql":
            op.execute(
                f"ALTER TABLE {table} ADD COLUMN tsv tsvector "
                f"GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
            )
            op.execute(f"CREATE INDEX ix_{table}_tsv ON {table} USING gin (tsv)")


def _create_fts5(table: str) -> None:
    """External-content FTS5 index kept in step by triggers (BM25 via ``bm25()``)."""
    fts = f"{table}_fts"
    op.execute(
        f"CREATE VIRTUAL TABLE {fts} USING fts5(text, content='{table}', content_rowid='id', "
        f"tokenize='porter unicode61')"
    )
    op.execute(
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END"
    )
    op.execute(
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, text) VALUES ('delete', old.id, old.text); END"
    )
    op.execute(
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF text ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, text) VALUES ('delete', old.id, old.text); "
        f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END"
    )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in FTS_TABLES:
            for suffix in ("ai", "ad", "au"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}")
            op.execute(f"DROP TABLE IF EXISTS {table}_fts")
    for table in (
        "tool_calibration",
        "tool_invocations",
        "summaries",
        "proposed_facts",
        "relations",
        "entities",
        "chunks",
        "utterances",
        "sessions",
    ):
        op.drop_table(table)
