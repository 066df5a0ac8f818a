"""Initial schema: jobs and their sites, sites, commands, telemetry, stream cursors.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None

# Spelled out rather than imported from the models: a revision is frozen history.
_TIME = sa.DateTime(timezone=True)
_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "control_jobs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("tls", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("sites", sa.JSON(), nullable=False),
        sa.Column("shards", sa.Integer(), nullable=False),
        sa.Column("clocks", sa.Integer(), nullable=False),
        sa.Column("params", sa.BigInteger(), nullable=True),
        sa.Column("bsp_bytes_per_clock", sa.BigInteger(), nullable=True),
        sa.Column("secret", sa.String(128), nullable=True),
        sa.Column("submitted_at", _TIME, nullable=False),
        sa.Column("started_at", _TIME, nullable=True),
        sa.Column("finished_at", _TIME, nullable=True),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_control_jobs"),
    )
    op.create_index("ix_control_jobs_state", "control_jobs", ["state"])
    op.create_index("ix_control_jobs_submitted_at", "control_jobs", ["submitted_at"])

    op.create_table(
        "control_job_sites",
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("site", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("clock", sa.Integer(), nullable=False),
        sa.Column("total_clocks", sa.Integer(), nullable=True),
        sa.Column("accuracy", sa.Float(), nullable=True),
        sa.Column("final_accuracy", sa.Float(), nullable=True),
        sa.Column("wan_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stall_s", sa.Float(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("stop_reason", sa.String(16), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("samples", sa.BigInteger(), nullable=True),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.Column("progress_at", sa.Float(), nullable=True),
        sa.Column("advanced_at", sa.Float(), nullable=True),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["control_jobs.id"],
            name="fk_control_job_sites_job_id_control_jobs",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "site", name="pk_control_job_sites"),
    )
    op.create_index("ix_control_job_sites_site", "control_job_sites", ["site"])

    op.create_table(
        "control_sites",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("agent_state", sa.String(16), nullable=True),
        sa.Column("online", sa.Boolean(), nullable=False),
        sa.Column("region", sa.String(64), nullable=True),
        sa.Column("registry_id", sa.String(36), nullable=True),
        sa.Column("geo_host", sa.String(255), nullable=True),
        sa.Column("geo_port", sa.Integer(), nullable=True),
        sa.Column("geo_ports", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(64), nullable=True),
        sa.Column("incarnation", sa.String(64), nullable=True),
        sa.Column("status_seq", sa.BigInteger(), nullable=False),
        sa.Column("status_time", sa.Float(), nullable=False),
        sa.Column("duplicates", sa.Integer(), nullable=False),
        sa.Column("first_seen_at", _TIME, nullable=False),
        sa.Column("last_seen_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_control_sites"),
    )

    op.create_table(
        "control_commands",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("site", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(36), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("issued_at", sa.Float(), nullable=False),
        sa.Column("published_epoch", sa.String(64), nullable=True),
        sa.Column("published_at", sa.Float(), nullable=True),
        sa.Column("publish_count", sa.Integer(), nullable=False),
        sa.Column("applied_at", _TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_control_commands"),
    )
    op.create_index("ix_control_commands_job_id", "control_commands", ["job_id"])
    op.create_index("ix_control_commands_state_site", "control_commands", ["state", "site"])
    op.create_index("ix_control_commands_site_created", "control_commands", ["site", "created_at"])

    op.create_table(
        "control_telemetry",
        sa.Column("id", _SERIAL, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("site", sa.String(64), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("clock", sa.Integer(), nullable=False),
        sa.Column("loss", sa.Float(), nullable=True),
        sa.Column("accuracy", sa.Float(), nullable=True),
        sa.Column("wan_bytes", sa.BigInteger(), nullable=True),
        sa.Column("stall_s", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_control_telemetry"),
    )
    op.create_index("ix_control_telemetry_job_id_id", "control_telemetry", ["job_id", "id"])

    op.create_table(
        "control_cursors",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_control_cursors"),
    )


def downgrade() -> None:
    for table in (
        "control_cursors",
        "control_telemetry",
        "control_commands",
        "control_sites",
        "control_job_sites",
        "control_jobs",
    ):
        op.drop_table(table)
