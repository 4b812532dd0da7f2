"""The DM's review of proposed facts records who decided and the NPC's words before an edit.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("proposed_facts") as batch:
        batch.add_column(sa.Column("original_text", sa.Text))
        batch.add_column(sa.Column("decided_by", sa.String(200)))


def downgrade() -> None:
    with op.batch_alter_table("proposed_facts") as batch:
        batch.drop_column("decided_by")
        batch.drop_column("original_text")
