"""schema 10: speculative-decoding acceptance per point and role (counter deltas over the measured window, their
interval across trials, and whether the launch forced a synthetic acceptance length)."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import F, T, key, reals, texts

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("acceptance", *key(), T("role", pk=True), *texts("method", "acceptance"), F("synthetic_al"),
                    T("via"), T("state", null=False), T("reason", null=False),
                    *reals("drafts", "draft_tokens", "accepted", "acceptance_length", "acceptance_length_lo",
                           "acceptance_length_hi", "acceptance_rate", "acceptance_rate_lo", "acceptance_rate_hi"),
                    T("per_position_json", null=False), T("trials_json", null=False))


def downgrade() -> None:
    op.drop_table("acceptance")
