"""schema 7: every trial of a point, and the packed 95 % intervals the analysis reads."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from infx.results.store.migrations.columns import Int, ints, key, reals

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("results", Int("trials", null=False, default="1"))
    op.add_column("results", sa.Column("ci", sa.LargeBinary()))
    op.create_table("trials", *key(), Int("trial", pk=True), *reals("started_at", "ended_at"),
                    Int("warmup", null=False), *reals("duration_s"), *ints("issued", "completed", "failed"),
                    *reals("request_per_s", "output_tok_per_s", "total_tok_per_s", "interactivity_median",
                           "interactivity_p90", "ttft_median", "ttft_p90", "ttft_p99", "tpot_median", "tpot_p90",
                           "itl_median", "e2el_median", "e2el_p90"))


def downgrade() -> None:
    op.drop_table("trials")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("ci")
        batch.drop_column("trials")
