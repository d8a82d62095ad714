"""schema 1: runs, points, results, start-up facts, failures (and the legacy ``schema_version`` table)."""

from __future__ import annotations

from alembic import op

from infx.results.store.migrations.columns import Int, T, flag, ints, key, reals, texts

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("schema_version", flag("version"))
    op.create_table("runs", T("run_id", pk=True), T("digest", null=False),
                    *texts("infx_version", "git_commit", "catalog_hash", "recipe_hash", "engine_version"),
                    *reals("started_at", "ended_at"), flag("official"), Int("pr_number"),
                    *texts("pr_branch", "pr_sha", "pr_url", "baseline_run"), T("manifest_json", null=False))
    op.create_table("points", *key(), T("digest", null=False),
                    *(T(n, null=False) for n in ("model", "model_prefix", "hardware", "runner", "framework",
                                                  "precision", "topology")),
                    *ints("tp", "pp", "ep", "dp_attn", "dcp", "pcp"),
                    *(Int(n, null=False) for n in ("multinode", "gpus_per_server", "conc")),
                    T("scenario", null=False), *ints("isl", "osl"), *texts("spec_decoding", "kv_offloading"),
                    T("image", null=False), T("launch_fingerprint"), T("state", null=False),
                    T("point_json", null=False))
    op.create_table("results", *key(), Int("complete", null=False), *reals("started_at", "ended_at", "duration_s"),
                    *ints("issued", "completed", "failed"),
                    *reals("success_rate", "request_per_s", "output_tok_per_s", "input_tok_per_s", "total_tok_per_s",
                           "interactivity_median", "interactivity_p90",
                           *(f"{m}_{s}" for m in ("ttft", "tpot", "itl", "e2el") for s in ("median", "p90", "p99"))),
                    *(T(n, null=False) for n in ("error_classes_json", "checks_json", "versions_json")))
    op.create_table("startup", *key(), Int("kv_cache_tokens"), *reals("kv_cache_gib", "max_concurrency",
                                                                    "model_load_gib", "startup_s"),
                    T("engine_version"), T("facts_json", null=False))
    op.create_table("failures", *key(), T("state", null=False), T("failure_class"), T("reason", null=False),
                    T("log_tail", null=False))


def downgrade() -> None:
    for table in ("failures", "startup", "results", "points", "runs", "schema_version"):
        op.drop_table(table)
