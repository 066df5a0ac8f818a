"""Sites report their device tier: each site's DeviceTierReport (its Flower SuperLink and
the latest rounds of its devices).

Revision ID: 0004_site_devices
Revises: 0003
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0004_site_devices"
down_revision: str | None = "0003"


def upgrade() -> None:
    with op.batch_alter_table("control_sites") as table:
        table.add_column(sa.Column("device_report", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("control_sites") as table:
        table.drop_column("device_report")
