"""schema 2: indexes on the point identity (workload lookups) and on (run, state)."""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("points_identity", "points",
                    ["model_prefix", "hardware", "framework", "precision", "scenario", "isl", "osl"])
    op.create_index("points_state", "points", ["run_id", "state"])


def downgrade() -> None:
    op.drop_index("points_state", "points")
    op.drop_index("points_identity", "points")
