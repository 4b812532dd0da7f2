"""Character bindings: which player plays which character, kept per campaign.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "character_bindings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("character", sa.String(200), nullable=False),
        sa.Column("bound_by", sa.String(200)),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint("campaign", "user_id", name="uq_character_binding"),
    )


def downgrade() -> None:
    op.drop_table("character_bindings")
