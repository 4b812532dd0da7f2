"""NPC lines keep the latency of the turn that spoke them (for past sessions' charts).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("utterances") as batch:
        batch.add_column(sa.Column("stages", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("utterances") as batch:
        batch.drop_column("stages")
