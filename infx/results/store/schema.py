"""The store's one schema: every table, column, key and index, as SQLAlchemy Core ``MetaData``.

Both backends (SQLite, the embedded default, and PostgreSQL, the team store) hold exactly these tables;
the Alembic revisions under ``migrations/versions`` build them step by step and a test requires that a
database upgraded to the head revision has this schema, column for column. Statement text anywhere in
the store package is generated from these ``Table`` objects, never typed by hand.

Types are chosen so that both backends hold the same values: every integer is 64-bit (``BigInteger``;
SQLite's integers are 64-bit, PostgreSQL's ``integer`` is not), every real is a double (PostgreSQL's
``real`` is a single float), packed intervals are bytes (``BLOB`` / ``bytea``) and JSON documents are
text (kept verbatim: the files are the source of truth, the store an index of them).
"""

from __future__ import annotations

import sqlalchemy as sa

#: The head revision as an integer: ``schema_version`` holds it (so an infx from before Alembic, which reads
#: only that table, refuses a newer store instead of writing into it) and the revisions are named after it.
SCHEMA_VERSION = 10

metadata = sa.MetaData()

Text = sa.Text
Int = sa.BigInteger
Real = sa.Double


def _key() -> list[sa.Column[str]]:
    return [sa.Column("run_id", Text, primary_key=True), sa.Column("point_id", Text, primary_key=True)]


schema_version = sa.Table(
    "schema_version", metadata,
    sa.Column("version", sa.Integer, nullable=False),
)

runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", Text, primary_key=True),
    sa.Column("digest", Text, nullable=False),
    sa.Column("infx_version", Text), sa.Column("git_commit", Text), sa.Column("catalog_hash", Text),
    sa.Column("recipe_hash", Text), sa.Column("engine_version", Text),
    sa.Column("started_at", Real), sa.Column("ended_at", Real),
    sa.Column("official", sa.Integer, nullable=False),
    sa.Column("pr_number", Int), sa.Column("pr_branch", Text), sa.Column("pr_sha", Text), sa.Column("pr_url", Text),
    sa.Column("baseline_run", Text),
    sa.Column("manifest_json", Text, nullable=False),
    sa.Column("origin", Text, nullable=False, server_default=sa.text("'measured'")),  # 0006: measured | imported
    sa.Column("append_only", sa.Integer, nullable=False, server_default=sa.text("0")),  # 0008: chains (snapshots)
)

points = sa.Table(
    "points", metadata,
    *_key(),
    sa.Column("digest", Text, nullable=False),
    sa.Column("model", Text, nullable=False), sa.Column("model_prefix", Text, nullable=False),
    sa.Column("hardware", Text, nullable=False), sa.Column("runner", Text, nullable=False),
    sa.Column("framework", Text, nullable=False), sa.Column("precision", Text, nullable=False),
    sa.Column("topology", Text, nullable=False),
    sa.Column("tp", Int), sa.Column("pp", Int), sa.Column("ep", Int), sa.Column("dp_attn", Int),
    sa.Column("dcp", Int), sa.Column("pcp", Int),
    sa.Column("multinode", Int, nullable=False), sa.Column("gpus_per_server", Int, nullable=False),
    sa.Column("conc", Int, nullable=False), sa.Column("scenario", Text, nullable=False),
    sa.Column("isl", Int), sa.Column("osl", Int),
    sa.Column("spec_decoding", Text), sa.Column("kv_offloading", Text), sa.Column("image", Text, nullable=False),
    sa.Column("launch_fingerprint", Text), sa.Column("state", Text, nullable=False),
    sa.Column("point_json", Text, nullable=False),
    sa.Column("prefill_gpus", Int), sa.Column("decode_gpus", Int),  # 0005: per-role normalisation
    sa.Column("disagg", Int, nullable=False, server_default=sa.text("0")),
    sa.Column("recipe_fingerprint", Text),  # 0008: the curve scope (infx.results.store.snapshots)
    sa.Column("scope", Text),
    sa.Index("points_state", "run_id", "state"),
    # no index on scope: the snapshot reads group every point by scope (a scan), and each index costs ingest
)

results = sa.Table(
    "results", metadata,
    *_key(),
    sa.Column("complete", Int, nullable=False),
    sa.Column("started_at", Real), sa.Column("ended_at", Real), sa.Column("duration_s", Real),
    sa.Column("issued", Int), sa.Column("completed", Int), sa.Column("failed", Int), sa.Column("success_rate", Real),
    sa.Column("request_per_s", Real), sa.Column("output_tok_per_s", Real), sa.Column("input_tok_per_s", Real),
    sa.Column("total_tok_per_s", Real),
    sa.Column("interactivity_median", Real), sa.Column("interactivity_p90", Real),
    sa.Column("ttft_median", Real), sa.Column("ttft_p90", Real), sa.Column("ttft_p99", Real),
    sa.Column("tpot_median", Real), sa.Column("tpot_p90", Real), sa.Column("tpot_p99", Real),
    sa.Column("itl_median", Real), sa.Column("itl_p90", Real), sa.Column("itl_p99", Real),
    sa.Column("e2el_median", Real), sa.Column("e2el_p90", Real), sa.Column("e2el_p99", Real),
    sa.Column("error_classes_json", Text, nullable=False), sa.Column("checks_json", Text, nullable=False),
    sa.Column("versions_json", Text, nullable=False),
    sa.Column("trials", Int, nullable=False, server_default=sa.text("1")),  # 0007: trials and intervals
    sa.Column("ci", sa.LargeBinary),  # infx.metrics.cipack
)

startup = sa.Table(
    "startup", metadata,
    *_key(),
    sa.Column("kv_cache_tokens", Int), sa.Column("kv_cache_gib", Real), sa.Column("max_concurrency", Real),
    sa.Column("model_load_gib", Real), sa.Column("startup_s", Real), sa.Column("engine_version", Text),
    sa.Column("facts_json", Text, nullable=False),
)

failures = sa.Table(
    "failures", metadata,
    *_key(),
    sa.Column("state", Text, nullable=False), sa.Column("failure_class", Text),
    sa.Column("reason", Text, nullable=False),
    sa.Column("log_tail", Text, nullable=False),
)

evals = sa.Table(  # 0003: accuracy evals (infx.results.evalrows)
    "evals", metadata,
    *_key(),
    sa.Column("task", Text, nullable=False), sa.Column("state", Text, nullable=False),
    sa.Column("failure_class", Text), sa.Column("reason", Text, nullable=False),
    sa.Column("threshold", Real), sa.Column("threshold_source", Text), sa.Column("n", Int),
    sa.Column("score_strict", Real), sa.Column("score_flexible", Real), sa.Column("stderr_strict", Real),
    sa.Column("stderr_flexible", Real), sa.Column("lm_eval_version", Text),
    sa.Column("protocol_key", Text, nullable=False), sa.Column("protocol_json", Text, nullable=False),
    sa.Column("filters_json", Text, nullable=False),
)

eval_answers = sa.Table(
    "eval_answers", metadata,
    *_key(),
    sa.Column("doc_id", Int, primary_key=True),
    sa.Column("strict", Int), sa.Column("flexible", Int),
)

telemetry = sa.Table(  # 0004: power / energy (InferenceX keys) and engine state (infx.results.telemetry_rows)
    "telemetry", metadata,
    *_key(),
    sa.Column("gpu_tool", Text), sa.Column("expected_gpu_count", Int),
    sa.Column("power_metric_schema_version", Int), sa.Column("power_valid", Int, nullable=False),
    sa.Column("power_reasons_json", Text, nullable=False),
    sa.Column("total_gpu_energy_j", Real), sa.Column("avg_total_gpu_power_w", Real), sa.Column("avg_power_w", Real),
    sa.Column("joules_per_successful_query", Real), sa.Column("joules_per_input_token", Real),
    sa.Column("joules_per_output_token", Real), sa.Column("joules_per_total_token", Real),
    sa.Column("cpu_energy_valid", Int), sa.Column("cpu_energy_j", Real), sa.Column("cpu_avg_power_w", Real),
    sa.Column("cpu_joules_per_output_token", Real),
    sa.Column("running_mean", Real), sa.Column("running_max", Real), sa.Column("waiting_mean", Real),
    sa.Column("waiting_max", Real), sa.Column("kv_usage_mean", Real), sa.Column("kv_usage_max", Real),
    sa.Column("preemptions", Real), sa.Column("prefix_cache_hit_rate", Real),
    sa.Column("theoretical_prefix_hit_rate", Real),
    sa.Column("summary_json", Text, nullable=False),
)

imported_agg = sa.Table(  # 0006: an imported InferenceX point's published agg JSON, verbatim
    "imported_agg", metadata,
    *_key(),
    sa.Column("name", Text, nullable=False), sa.Column("source", Text, nullable=False),
    sa.Column("agg_json", Text, nullable=False),
    sa.Column("seq", Int, nullable=False, server_default=sa.text("0")),  # 0008: import order (no rowid on PostgreSQL)
)

trials = sa.Table(  # 0007: every trial of a point
    "trials", metadata,
    *_key(),
    sa.Column("trial", Int, primary_key=True),
    sa.Column("started_at", Real), sa.Column("ended_at", Real), sa.Column("warmup", Int, nullable=False),
    sa.Column("duration_s", Real), sa.Column("issued", Int), sa.Column("completed", Int), sa.Column("failed", Int),
    sa.Column("request_per_s", Real), sa.Column("output_tok_per_s", Real), sa.Column("total_tok_per_s", Real),
    sa.Column("interactivity_median", Real), sa.Column("interactivity_p90", Real),
    sa.Column("ttft_median", Real), sa.Column("ttft_p90", Real), sa.Column("ttft_p99", Real),
    sa.Column("tpot_median", Real), sa.Column("tpot_p90", Real),
    sa.Column("itl_median", Real), sa.Column("e2el_median", Real), sa.Column("e2el_p90", Real),
)

acceptance = sa.Table(  # 0010: speculative decoding per point and role (infx.results.acceptance_rows)
    "acceptance", metadata,
    *_key(),
    sa.Column("role", Text, primary_key=True),
    sa.Column("method", Text), sa.Column("acceptance", Text),  # measured | synthetic (the launch forced it)
    sa.Column("synthetic_al", Real), sa.Column("via", Text),
    sa.Column("state", Text, nullable=False), sa.Column("reason", Text, nullable=False),
    sa.Column("drafts", Real), sa.Column("draft_tokens", Real), sa.Column("accepted", Real),
    sa.Column("acceptance_length", Real), sa.Column("acceptance_length_lo", Real),
    sa.Column("acceptance_length_hi", Real), sa.Column("acceptance_rate", Real),
    sa.Column("acceptance_rate_lo", Real), sa.Column("acceptance_rate_hi", Real),
    sa.Column("per_position_json", Text, nullable=False), sa.Column("trials_json", Text, nullable=False),
)

quarantine = sa.Table(  # 0008: what ingest refused, with the rule and reason (infx.results.store.quarantine)
    "quarantine", metadata,
    sa.Column("source", Text, primary_key=True),  # the file or point directory as ingest named it
    sa.Column("rule", Text, primary_key=True),
    sa.Column("run_id", Text), sa.Column("point_id", Text),
    sa.Column("digest", Text),  # sha256 of the refused file's bytes, when there is one
    sa.Column("reason", Text, nullable=False), sa.Column("line", Int),
    sa.Column("first_seen", Real, nullable=False), sa.Column("last_seen", Real, nullable=False),
    sa.Column("times", Int, nullable=False, server_default=sa.text("1")),
    sa.Index("quarantine_point", "run_id", "point_id"),
)

#: Per-point tables in write order: every row of a point is in these, keyed by (run_id, point_id).
POINT_TABLES: tuple[sa.Table, ...] = (points, results, startup, failures, telemetry, evals, eval_answers, trials,
                                      acceptance)
#: Every table a point's rows can be in, the imported run's published files included (deleted with the point).
CHILD_TABLES: tuple[sa.Table, ...] = (*POINT_TABLES[1:], imported_agg)
