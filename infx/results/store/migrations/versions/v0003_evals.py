"""schema 3: accuracy evals (one row per graded or failed eval) and per-question answers."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import Int, T, key, reals

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("evals", *key(), *(T(n, null=False) for n in ("task", "state")), T("failure_class"),
                    T("reason", null=False), *reals("threshold"), T("threshold_source"), Int("n"),
                    *reals("score_strict", "score_flexible", "stderr_strict", "stderr_flexible"),
                    T("lm_eval_version"),
                    *(T(n, null=False) for n in ("protocol_key", "protocol_json", "filters_json")))
    op.create_table("eval_answers", *key(), Int("doc_id", pk=True), Int("strict"), Int("flexible"))


def downgrade() -> None:
    op.drop_table("eval_answers")
    op.drop_table("evals")
