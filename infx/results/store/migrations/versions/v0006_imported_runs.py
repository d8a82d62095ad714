"""schema 6: InferenceX interop: a run's origin (measured | imported) and the imported points' published JSON."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import T, key

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", T("origin", null=False, default="'measured'"))
    op.create_table("imported_agg", *key(), *(T(n, null=False) for n in ("name", "source", "agg_json")))


def downgrade() -> None:
    op.drop_table("imported_agg")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("origin")
