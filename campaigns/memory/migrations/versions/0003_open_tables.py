"""Open tables: the shared state that lets another process resume a guild's table.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "open_tables",
        sa.Column("guild_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("voice_channel_id", sa.BigInteger, nullable=False),
        sa.Column("text_channel_id", sa.BigInteger),
        sa.Column("campaign", sa.String(500)),
        sa.Column("memory_session_id", sa.String(36)),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("owner", sa.String(200)),
        sa.Column("opened_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("open_tables")
