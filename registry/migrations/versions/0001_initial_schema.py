"""Initial schema: sites, their tokens and reports, model artifacts and their sites.

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
_REGISTERED = sa.text("deregistered_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "sites",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("endpoint", sa.String(2048), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("capabilities", sa.JSON(), nullable=False),
        sa.Column("registered_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.Column("last_seen_at", _TIME, nullable=False),
        sa.Column("deregistered_at", _TIME, nullable=True),
        sa.Column("model_signature", sa.String(128), nullable=True),
        sa.Column("model_version", sa.String(64), nullable=True),
        sa.Column("latest_priors", sa.LargeBinary(), nullable=True),
        sa.Column("reports_total", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sites"),
    )
    op.create_index("ix_sites_name", "sites", ["name"])
    op.create_index("ix_sites_region", "sites", ["region"])
    op.create_index("ix_sites_signature_seen", "sites", ["model_signature", "last_seen_at"])
    op.create_index(
        "uq_sites_name_registered",
        "sites",
        ["name"],
        unique=True,
        sqlite_where=_REGISTERED,
        postgresql_where=_REGISTERED,
    )

    op.create_table(
        "site_tokens",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("site_id", sa.String(36), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("hint", sa.String(16), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("revoked_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["site_id"], ["sites.id"], name="fk_site_tokens_site_id_sites", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_site_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_site_tokens_token_hash"),
    )
    op.create_index("ix_site_tokens_site_id", "site_tokens", ["site_id"])

    op.create_table(
        "reports",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("site_id", sa.String(36), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("class_priors", sa.JSON(), nullable=False),
        sa.Column("accuracy", sa.Float(), nullable=False),
        sa.Column("samples", sa.BigInteger(), nullable=False),
        sa.Column("model_signature", sa.String(128), nullable=False),
        sa.Column("model_version", sa.String(64), nullable=False),
        sa.Column("drift", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["site_id"], ["sites.id"], name="fk_reports_site_id_sites", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_reports"),
        sa.UniqueConstraint("site_id", "seq", name="uq_reports_site_id"),
    )

    op.create_table(
        "model_artifacts",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("job", sa.String(128), nullable=True),
        sa.Column("clock", sa.BigInteger(), nullable=True),
        sa.Column("checksum", sa.String(160), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("uri", sa.String(2048), nullable=False),
        sa.Column("model_signature", sa.String(128), nullable=True),
        sa.Column("parent_id", sa.String(36), nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("created_by", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["model_artifacts.id"],
            name="fk_model_artifacts_parent_id_model_artifacts",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_model_artifacts"),
    )
    op.create_index("ix_model_artifacts_job", "model_artifacts", ["job"])
    op.create_index("ix_model_artifacts_parent_id", "model_artifacts", ["parent_id"])
    op.create_index("ix_model_artifacts_created_at", "model_artifacts", ["created_at"])

    op.create_table(
        "artifact_sites",
        sa.Column("artifact_id", sa.String(36), nullable=False),
        sa.Column("site_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(
            ["artifact_id"],
            ["model_artifacts.id"],
            name="fk_artifact_sites_artifact_id_model_artifacts",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], name="fk_artifact_sites_site_id_sites"),
        sa.PrimaryKeyConstraint("artifact_id", "site_id", name="pk_artifact_sites"),
    )
    op.create_index("ix_artifact_sites_site_id", "artifact_sites", ["site_id"])


def downgrade() -> None:
    for table in ("artifact_sites", "model_artifacts", "reports", "site_tokens", "sites"):
        op.drop_table(table)
