"""schema 5: multi-role deployments: GPUs per role and the disaggregated flag (per-role normalisation)."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import Int

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("points", Int("prefill_gpus"))
    op.add_column("points", Int("decode_gpus"))
    op.add_column("points", Int("disagg", null=False, default="0"))


def downgrade() -> None:
    with op.batch_alter_table("points") as batch:
        for name in ("disagg", "decode_gpus", "prefill_gpus"):
            batch.drop_column(name)
