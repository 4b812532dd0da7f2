"""Tool invocations record the DM's approval decision.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_invocations") as batch:
        batch.add_column(sa.Column("approval", sa.String(200)))


def downgrade() -> None:
    with op.batch_alter_table("tool_invocations") as batch:
        batch.drop_column("approval")
