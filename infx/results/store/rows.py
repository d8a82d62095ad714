"""Typed rows of the tables other stages build rows for (``infx.interop`` imports published results): every
column named, in the schema's order, optional ones defaulting to NULL. ``tests/results/test_store_schema.py``
requires each row type to match its ``schema`` table column for column."""

from __future__ import annotations

from typing import NamedTuple


class PointRow(NamedTuple):
    """A ``points`` row: a point's identity (``infx.results.store.writes`` builds these from bundles)."""

    run_id: str
    point_id: str
    digest: str
    model: str
    model_prefix: str
    hardware: str
    runner: str
    framework: str
    precision: str
    topology: str
    tp: int | None
    pp: int | None
    ep: int | None
    dp_attn: int | None
    dcp: int | None
    pcp: int | None
    multinode: int
    gpus_per_server: int
    conc: int
    scenario: str
    isl: int | None
    osl: int | None
    spec_decoding: str | None
    kv_offloading: str | None
    image: str
    launch_fingerprint: str | None
    state: str
    point_json: str
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    disagg: int = 0
    recipe_fingerprint: str | None = None
    scope: str | None = None


class ResultRow(NamedTuple):
    """A ``results`` row: the figures the analysis reads (latencies in ms, throughput per server)."""

    run_id: str
    point_id: str
    complete: int
    started_at: float | None = None
    ended_at: float | None = None
    duration_s: float | None = None
    issued: int | None = None
    completed: int | None = None
    failed: int | None = None
    success_rate: float | None = None
    request_per_s: float | None = None
    output_tok_per_s: float | None = None
    input_tok_per_s: float | None = None
    total_tok_per_s: float | None = None
    interactivity_median: float | None = None
    interactivity_p90: float | None = None
    ttft_median: float | None = None
    ttft_p90: float | None = None
    ttft_p99: float | None = None
    tpot_median: float | None = None
    tpot_p90: float | None = None
    tpot_p99: float | None = None
    itl_median: float | None = None
    itl_p90: float | None = None
    itl_p99: float | None = None
    e2el_median: float | None = None
    e2el_p90: float | None = None
    e2el_p99: float | None = None
    error_classes_json: str = "{}"
    checks_json: str = "[]"
    versions_json: str = "{}"
    trials: int = 1
    ci: bytes | None = None


class ImportedAggRow(NamedTuple):
    """An ``imported_agg`` row: a published InferenceX point's aggregated JSON, verbatim."""

    run_id: str
    point_id: str
    name: str
    source: str
    agg_json: str
    seq: int = 0


class ImportedRows(NamedTuple):
    """The rows of one imported point (``Store.replace_imported_run``)."""

    point: PointRow
    result: ResultRow
    agg: ImportedAggRow
