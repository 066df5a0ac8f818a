"""Trust: site enrolment tokens and certificates; no job secret or TLS flag on jobs
(geo links are always mutual TLS with each site's own certificate); a telemetry cursor
per site (each site's telemetry has a stream of its own).

Revision ID: 0002_trust
Revises: 0001
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0002_trust"
down_revision: str | None = "0001"

_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "control_enrol_tokens",
        sa.Column("site", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("issued_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("site", name="pk_control_enrol_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_control_enrol_tokens_token_hash"),
    )
    op.create_table(
        "control_site_certificates",
        sa.Column("serial", sa.String(64), nullable=False),
        sa.Column("site", sa.String(64), nullable=False),
        sa.Column("issued_at", _TIME, nullable=False),
        sa.Column("not_after", _TIME, nullable=False),
        sa.Column("revoked_at", _TIME, nullable=True),
        sa.Column("redis_password_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("serial", name="pk_control_site_certificates"),
    )
    op.create_index("ix_control_site_certificates_site", "control_site_certificates", ["site"])
    with op.batch_alter_table("control_jobs") as batch:
        batch.drop_column("secret")
        batch.drop_column("tls")
    # One cursor per site's telemetry stream: telemetry:<site name of up to 64>
    with op.batch_alter_table("control_cursors") as batch:
        batch.alter_column("name", type_=sa.String(128), existing_type=sa.String(64))


def downgrade() -> None:
    op.execute("DELETE FROM control_cursors WHERE length(name) > 64")
    with op.batch_alter_table("control_cursors") as batch:
        batch.alter_column("name", type_=sa.String(64), existing_type=sa.String(128))
    with op.batch_alter_table("control_jobs") as batch:
        batch.add_column(sa.Column("tls", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("secret", sa.String(128), nullable=True))
    op.drop_index("ix_control_site_certificates_site", "control_site_certificates")
    op.drop_table("control_site_certificates")
    op.drop_table("control_enrol_tokens")
