"""Sites take their report updates in place: no index on last_seen_at, free room per page.

Every report updates its site's row (counter, last seen, latest priors). With
last_seen_at indexed, each such update wrote a new entry into every index of the table
and left a dead row that only VACUUM reclaims (a server with autovacuum off slows down
report by report: measured with bench registry). Without it, and with a fill factor
that leaves room on each page, PostgreSQL updates the row "HOT" (heap-only: no index
entry written, the old version pruned on the page itself). Neighbour queries rank an
in-memory snapshot, so last_seen_at needs no index; an index on model_signature alone
still serves the snapshot-less path.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"

_FILL_FACTOR = 70


def upgrade() -> None:
    op.drop_index("ix_sites_signature_seen", table_name="sites")
    op.create_index("ix_sites_model_signature", "sites", ["model_signature"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE sites SET (fillfactor = {_FILL_FACTOR})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE sites RESET (fillfactor)")
    op.drop_index("ix_sites_model_signature", table_name="sites")
    op.create_index("ix_sites_signature_seen", "sites", ["model_signature", "last_seen_at"])
