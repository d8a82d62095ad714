"""schema 8 (the team store): curve scopes and append-only runs (snapshots), the quarantine of rows
ingest refused, and the import order of published files as a column (PostgreSQL has no ``rowid``).

Points already in the store get their recipe fingerprint and scope key here, computed from their ``point_json``
(:mod:`infx.results.store.snapshots`)."""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from infx.results.store.migrations.columns import F, Int, T, flag

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_SCOPE_COLS = ("model", "hardware", "framework", "precision", "scenario", "isl", "osl", "spec_decoding", "disagg")


def upgrade() -> None:
    op.add_column("runs", flag("append_only", default="0"))
    op.add_column("points", T("recipe_fingerprint"))
    op.add_column("points", T("scope"))
    op.add_column("imported_agg", Int("seq", null=False, default="0"))
    op.create_table("quarantine", T("source", pk=True), T("rule", pk=True), T("run_id"), T("point_id"), T("digest"),
                    T("reason", null=False), Int("line"), F("first_seen", null=False), F("last_seen", null=False),
                    Int("times", null=False, default="1"))
    op.create_index("quarantine_point", "quarantine", ["run_id", "point_id"])
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":  # the order published files were imported in, as SQLite kept it
        bind.execute(sa.text("UPDATE imported_agg SET seq = rowid"))
    _backfill_scopes(bind)


def _backfill_scopes(bind: sa.Connection) -> None:
    from infx.results.store.snapshots import recipe_fingerprint, scope_key

    points = sa.table("points", *(sa.column(c) for c in ("run_id", "point_id", "point_json", "recipe_fingerprint",
                                                          "scope", *_SCOPE_COLS)))
    rows = bind.execute(sa.select(points.c.run_id, points.c.point_id, points.c.point_json,
                                  *(points.c[c] for c in _SCOPE_COLS))).all()
    updates = []
    for run_id, point_id, point_json, *ident in rows:
        try:
            row = json.loads(point_json)["point"]
        except (ValueError, KeyError, TypeError):
            continue  # not a point file this infx wrote: left without a scope (never in a snapshot)
        recipe = recipe_fingerprint(row)
        updates.append({"r": run_id, "p": point_id, "fp": recipe, "scope": scope_key(*ident, recipe)})
    if updates:
        where = sa.and_(points.c.run_id == sa.bindparam("r"), points.c.point_id == sa.bindparam("p"))
        bind.execute(sa.update(points).where(where).values(recipe_fingerprint=sa.bindparam("fp"),
                                                             scope=sa.bindparam("scope")), updates)


def downgrade() -> None:
    op.drop_index("quarantine_point", "quarantine")
    op.drop_table("quarantine")
    with op.batch_alter_table("imported_agg") as batch:
        batch.drop_column("seq")
    with op.batch_alter_table("points") as batch:
        batch.drop_column("scope")
        batch.drop_column("recipe_fingerprint")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("append_only")
