"""Sites report their own data: each site's DataReport (schema, samples, label histogram).

Revision ID: 0003
Revises: 0002_trust
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002_trust"


def upgrade() -> None:
    with op.batch_alter_table("control_sites") as table:
        table.add_column(sa.Column("data_report", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("control_sites") as table:
        table.drop_column("data_report")
