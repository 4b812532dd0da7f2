"""Session usage: what each session used of each model, per NPC, and what it cost.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_usage",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "session_id",
            sa.String(36),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("service", sa.String(20), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("npc", sa.String(200), nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("estimated_calls", sa.Integer, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sa.Column("audio_input_tokens", sa.BigInteger, nullable=False),
        sa.Column("audio_output_tokens", sa.BigInteger, nullable=False),
        sa.Column("characters", sa.BigInteger, nullable=False),
        sa.Column("audio_seconds", sa.Float, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint("session_id", "service", "model", "npc", name="uq_usage"),
    )
    op.create_index("ix_session_usage_session_id", "session_usage", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_session_usage_session_id", table_name="session_usage")
    op.drop_table("session_usage")
