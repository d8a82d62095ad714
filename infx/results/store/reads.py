"""The store's typed reads: the queries the analysis, the report, the dashboard and the interop run, each
returning named rows (never positions to unpack). Statements are SQLAlchemy Core over ``schema``.

A store opened read-only is not migrated: a table or column a later revision added may be missing, and the
reads that need it answer as a store of that age would (no telemetry, one trial and no interval, no evals).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa

from infx.results.layout import RunManifest
from infx.results.store import schema
from infx.results.store.quarantine import Entry
from infx.results.store.snapshots import RunFacts, ScopePoint, ScopeRun

#: The tables and columns a store has (None: everything ``schema`` defines).
Have = dict[str, frozenset[str]] | None

p, r, s, t = schema.points, schema.results, schema.startup, schema.telemetry


def _has(have: Have, table: str, column: str | None = None) -> bool:
    if have is None:
        return True
    cols = have.get(table)
    return cols is not None and (column is None or column in cols)


def _col(have: Have, col: sa.Column[Any], default: Any = None) -> sa.ColumnElement[Any]:
    """``col``, or a constant where the store predates it."""
    return col if _has(have, col.table.name, col.name) else sa.literal(default, col.type) if default is not None \
        else sa.null()


def _runs_in(col: sa.Column[Any], run_ids: Sequence[str] | None) -> sa.ColumnElement[bool]:
    return sa.true() if run_ids is None else col.in_(list(run_ids))


# ------------------------------------------------------------------------------------------------- runs


class RunOverview(NamedTuple):
    """A run as the dashboard's index lists it."""

    run_id: str
    official: bool
    started_at: float | None
    pr_number: int | None
    pr_branch: str | None
    baseline_run: str | None
    done: int
    other: int


def run_ids(conn: sa.Connection, origin: str | None = None) -> list[str]:
    runs = schema.runs
    q = sa.select(runs.c.run_id).order_by(runs.c.started_at, runs.c.run_id)
    if origin is not None:
        q = q.where(runs.c.origin == origin)
    return list(conn.execute(q).scalars())


def origin(conn: sa.Connection, run_id: str) -> str | None:
    runs = schema.runs
    value = conn.execute(sa.select(runs.c.origin).where(runs.c.run_id == run_id)).scalar()
    return None if value is None else str(value)


def run_digest(conn: sa.Connection, run_id: str) -> str | None:
    runs = schema.runs
    value = conn.execute(sa.select(runs.c.digest).where(runs.c.run_id == run_id)).scalar()
    return None if value is None else str(value)


def manifest(conn: sa.Connection, run_id: str) -> RunManifest | None:
    runs = schema.runs
    text = conn.execute(sa.select(runs.c.manifest_json).where(runs.c.run_id == run_id)).scalar()
    return None if text is None else RunManifest.model_validate_json(text)


def counts(conn: sa.Connection, tables: Sequence[str]) -> dict[str, int]:
    return {name: int(conn.execute(sa.select(sa.func.count()).select_from(schema.metadata.tables[name])).scalar_one())
            for name in tables}


def runs_overview(conn: sa.Connection) -> list[RunOverview]:
    """Every run, newest first, with its measured and failed / skipped point counts."""
    runs = schema.runs
    done = sa.func.sum(sa.case((p.c.state == "done", 1), else_=0))
    other = sa.func.sum(sa.case((p.c.state != "done", 1), else_=0))
    per_run = sa.select(p.c.run_id, done.label("done"), other.label("other")).group_by(p.c.run_id).subquery()
    q = (sa.select(runs.c.run_id, runs.c.official, runs.c.started_at, runs.c.pr_number, runs.c.pr_branch,
                   runs.c.baseline_run, sa.func.coalesce(per_run.c.done, 0), sa.func.coalesce(per_run.c.other, 0))
         .outerjoin(per_run, per_run.c.run_id == runs.c.run_id)
         .order_by(runs.c.started_at.desc(), runs.c.run_id))
    return [RunOverview(row[0], bool(row[1]), row[2], row[3], row[4], row[5], int(row[6]), int(row[7]))
            for row in conn.execute(q)]


def run_facts(conn: sa.Connection, have: Have = None) -> dict[str, RunFacts]:
    """What the snapshot rules need of every run (the manifest's images, with their digests)."""
    runs = schema.runs
    q = sa.select(runs.c.run_id, runs.c.started_at, runs.c.ended_at, _col(have, runs.c.append_only, 0),
                  _col(have, runs.c.origin, "measured"), runs.c.manifest_json)
    out = {}
    for run_id, started, ended, append_only, org, text in conn.execute(q):
        images: dict[str, str | None] = {}
        try:
            for ref in json.loads(text).get("images") or []:
                images[str(ref.get("image"))] = ref.get("digest")
        except (ValueError, AttributeError):
            pass
        out[run_id] = RunFacts(run_id, started, ended, bool(append_only), str(org), images)
    return out


# ------------------------------------------------------------------------------------------- snapshots


def scope_runs(conn: sa.Connection) -> list[ScopeRun]:
    """Per (scope, run): the images of its successful points."""
    q = (sa.select(p.c.scope, p.c.run_id, p.c.image).where(p.c.state == "done", p.c.scope.is_not(None))
         .group_by(p.c.scope, p.c.run_id, p.c.image))
    images: dict[tuple[str, str], set[str]] = {}
    for scope, run_id, image in conn.execute(q):
        images.setdefault((scope, run_id), set()).add(image)
    return [ScopeRun(scope, run_id, frozenset(i)) for (scope, run_id), i in images.items()]


def scope_points(conn: sa.Connection, run_ids: Sequence[str]) -> list[ScopePoint]:
    q = (sa.select(p.c.scope, p.c.run_id, p.c.point_id, p.c.conc)
         .where(p.c.state == "done", p.c.scope.is_not(None), p.c.run_id.in_(list(run_ids))))
    return [ScopePoint(*row) for row in conn.execute(q)]


# --------------------------------------------------------------------------------------- measured points


class Workload(NamedTuple):
    """What is being served: a point's model, precision, hardware, framework, scenario and sequence lengths
    (the analysis compares arms within one workload)."""

    model_prefix: str
    precision: str
    hardware: str
    framework: str
    scenario: str
    isl: int | None
    osl: int | None

    @property
    def label(self) -> str:
        seq = "agentic" if self.scenario == "agentic-coding" else f"{self.isl}/{self.osl}"
        return f"{self.model_prefix} {self.precision} {self.hardware} {self.framework} {seq}"


class Arm(NamedTuple):
    """How it is served: topology, speculative decoding and KV offloading (arms compete within a workload)."""

    topology: str
    spec_decoding: str
    kv_offloading: str

    @property
    def label(self) -> str:
        return self.label_with(spec=True, kv=True)

    def label_with(self, *, spec: bool, kv: bool) -> str:
        parts = [self.topology]
        if spec and self.spec_decoding not in ("", "none"):
            parts.append(f"spec={self.spec_decoding}")
        if kv and self.kv_offloading not in ("", "none"):
            parts.append(f"kv={self.kv_offloading}")
        return " ".join(parts)


class Figures(NamedTuple):
    """The figures of a measured point the analysis and the report read (latencies in ms, throughput per
    server, interactivity in tok/s/user)."""

    interactivity_median: float | None
    interactivity_p90: float | None
    output_tok_per_s: float
    total_tok_per_s: float
    ttft_median: float | None
    ttft_p90: float | None
    ttft_p99: float | None
    tpot_median: float | None
    itl_median: float | None
    itl_p90: float | None
    itl_p99: float | None
    e2el_median: float | None
    e2el_p90: float | None
    success_rate: float | None
    kv_cache_tokens: int | None


class MeasuredRow(NamedTuple):
    """A measured (done) point as :func:`measured` reads it."""

    run_id: str
    point_id: str
    workload: Workload
    arm: Arm
    runner: str
    image: str
    conc: int
    gpus_per_server: int
    launch_fingerprint: str | None
    figures: Figures
    prefill_gpus: int | None
    decode_gpus: int | None
    disagg: int
    checks_json: str
    joules_per_output_token: float | None
    trials: int
    ci: bytes | None


def _workload_cols() -> list[sa.ColumnElement[Any]]:
    return [p.c.model_prefix, p.c.precision, p.c.hardware, p.c.framework, p.c.scenario, p.c.isl, p.c.osl]


def _arm_cols() -> list[sa.ColumnElement[Any]]:
    return [p.c.topology, sa.func.coalesce(p.c.spec_decoding, "none"), sa.func.coalesce(p.c.kv_offloading, "none")]


def measured(conn: sa.Connection, run_ids: Sequence[str] | None, have: Have = None) -> list[MeasuredRow]:
    """Every measured point of the given runs (all runs when None), ordered by run, topology, conc, point."""
    energy = _has(have, "telemetry")
    # the SELECT in the rows' field order: (run, point), Workload, Arm, facts, Figures, the rest
    cols = [p.c.run_id, p.c.point_id, *_workload_cols(), *_arm_cols(),
            p.c.runner, p.c.image, p.c.conc, p.c.gpus_per_server, p.c.launch_fingerprint,
            r.c.interactivity_median, r.c.interactivity_p90, r.c.output_tok_per_s, r.c.total_tok_per_s,
            r.c.ttft_median, r.c.ttft_p90, r.c.ttft_p99, r.c.tpot_median, r.c.itl_median, r.c.itl_p90, r.c.itl_p99,
            r.c.e2el_median, r.c.e2el_p90, r.c.success_rate, s.c.kv_cache_tokens,
            _col(have, p.c.prefill_gpus), _col(have, p.c.decode_gpus), _col(have, p.c.disagg, 0), r.c.checks_json,
            t.c.joules_per_output_token if energy else sa.null(), _col(have, r.c.trials, 1), _col(have, r.c.ci)]
    j = (p.join(r, sa.and_(r.c.run_id == p.c.run_id, r.c.point_id == p.c.point_id))
         .outerjoin(s, sa.and_(s.c.run_id == p.c.run_id, s.c.point_id == p.c.point_id)))
    if energy:
        j = j.outerjoin(t, sa.and_(t.c.run_id == p.c.run_id, t.c.point_id == p.c.point_id, t.c.power_valid == 1))
    q = (sa.select(*cols).select_from(j).where(p.c.state == "done", _runs_in(p.c.run_id, run_ids))
         .order_by(p.c.run_id, p.c.topology, p.c.conc, p.c.point_id))
    workloads: dict[tuple[Any, ...], Workload] = {}  # a few distinct ones: each built once
    arms: dict[tuple[Any, ...], Arm] = {}
    out = []
    for row in conn.execute(q):
        wk, ak = tuple(row[2:9]), tuple(row[9:12])
        workload = workloads.get(wk) or workloads.setdefault(wk, Workload._make(wk))
        arm = arms.get(ak) or arms.setdefault(ak, Arm._make(ak))
        out.append(MeasuredRow(row[0], row[1], workload, arm, row[12], row[13], row[14], row[15], row[16],
                               Figures._make(row[17:32]), row[32], row[33], row[34], row[35], row[36], row[37],
                               row[38]))
    return out


class PointLineRow(NamedTuple):
    """Every point of a run as the report's point table lists it, measured or not."""

    point_id: str
    state: str
    topology: str
    conc: int
    gpus_per_server: int
    image: str
    launch_fingerprint: str | None
    failure_class: str | None
    reason: str
    log_tail: str
    kv_cache_tokens: int | None


def point_lines(conn: sa.Connection, run_id: str) -> list[PointLineRow]:
    f = schema.failures
    q = (sa.select(p.c.point_id, p.c.state, p.c.topology, p.c.conc, p.c.gpus_per_server, p.c.image,
                   p.c.launch_fingerprint, f.c.failure_class, sa.func.coalesce(f.c.reason, ""),
                   sa.func.coalesce(f.c.log_tail, ""), s.c.kv_cache_tokens)
         .select_from(p.outerjoin(f, sa.and_(f.c.run_id == p.c.run_id, f.c.point_id == p.c.point_id))
                      .outerjoin(s, sa.and_(s.c.run_id == p.c.run_id, s.c.point_id == p.c.point_id)))
         .where(p.c.run_id == run_id).order_by(p.c.topology, p.c.conc, p.c.point_id))
    return [PointLineRow._make(row) for row in conn.execute(q)]


# ------------------------------------------------------------------------------------------------ evals


class EvalRow(NamedTuple):
    """A point's accuracy eval: its state (pass | accuracy-fail | failed), scores per filter and protocol."""

    run_id: str
    point_id: str
    workload: Workload
    arm: Arm
    conc: int
    task: str
    state: str
    reason: str
    threshold: float | None
    n: int | None
    score_strict: float | None
    score_flexible: float | None
    stderr_strict: float | None
    stderr_flexible: float | None
    protocol_key: str


def evals(conn: sa.Connection, run_ids: Sequence[str] | None, have: Have = None) -> list[EvalRow]:
    if not _has(have, "evals"):
        return []  # a store from before the evals revision (opened read-only)
    e = schema.evals
    q = (sa.select(p.c.run_id, p.c.point_id, *_workload_cols(), *_arm_cols(), p.c.conc, e.c.task, e.c.state,
                   e.c.reason, e.c.threshold, e.c.n, e.c.score_strict, e.c.score_flexible, e.c.stderr_strict,
                   e.c.stderr_flexible, e.c.protocol_key)
         .select_from(e.join(p, sa.and_(p.c.run_id == e.c.run_id, p.c.point_id == e.c.point_id)))
         .where(_runs_in(p.c.run_id, run_ids)).order_by(p.c.run_id, p.c.topology, p.c.conc, p.c.point_id))
    return [EvalRow(row[0], row[1], Workload._make(row[2:9]), Arm._make(row[9:12]), *row[12:])
            for row in conn.execute(q)]


def answers(conn: sa.Connection, run_id: str, point_id: str, column: str) -> dict[int, bool]:
    """doc id -> right or wrong under the ``strict`` or ``flexible`` filter (questions without a verdict left out)."""
    a = schema.eval_answers
    col = a.c[column]
    q = sa.select(a.c.doc_id, col).where(a.c.run_id == run_id, a.c.point_id == point_id, col.is_not(None))
    return {int(doc): bool(v) for doc, v in conn.execute(q)}


# -------------------------------------------------------------------------------------------- telemetry


class PowerRow(NamedTuple):
    run_id: str
    point_id: str
    runner: str
    power_valid: int
    avg_total_gpu_power_w: float | None
    cpu_energy_valid: int | None
    cpu_avg_power_w: float | None


def power(conn: sa.Connection, run_ids: Sequence[str] | None, have: Have = None) -> list[PowerRow]:
    if not _has(have, "telemetry"):
        return []
    q = (sa.select(t.c.run_id, t.c.point_id, p.c.runner, t.c.power_valid, t.c.avg_total_gpu_power_w,
                   t.c.cpu_energy_valid, t.c.cpu_avg_power_w)
         .select_from(t.join(p, sa.and_(p.c.run_id == t.c.run_id, p.c.point_id == t.c.point_id)))
         .where(_runs_in(t.c.run_id, run_ids)))
    return [PowerRow._make(row) for row in conn.execute(q)]


def telemetry_figures(conn: sa.Connection, run_id: str, have: Have = None) -> dict[str, dict[str, Any]]:
    """point id -> its ``telemetry`` row by column name (empty when the store predates the table)."""
    if not _has(have, "telemetry"):
        return {}
    return {row.point_id: dict(row._mapping) for row in conn.execute(sa.select(t).where(t.c.run_id == run_id))}


# ---------------------------------------------------------------------------------------------- imports


def imported_aggs(conn: sa.Connection, run_id: str) -> list[tuple[str, str, str]]:
    """(point id, export file name, published JSON text) of an imported run, in import order."""
    a = schema.imported_agg
    q = sa.select(a.c.point_id, a.c.name, a.c.agg_json).where(a.c.run_id == run_id).order_by(a.c.seq, a.c.point_id)
    return [(row[0], row[1], row[2]) for row in conn.execute(q)]


# ------------------------------------------------------------------------------------------- quarantine


def quarantined(conn: sa.Connection, have: Have = None) -> list[Entry]:
    if not _has(have, "quarantine"):
        return []
    q = schema.quarantine
    rows = conn.execute(sa.select(q.c.source, q.c.rule, q.c.reason, q.c.run_id, q.c.point_id, q.c.digest, q.c.line,
                                  q.c.first_seen, q.c.last_seen, q.c.times)
                        .order_by(q.c.run_id, q.c.point_id, q.c.source, q.c.rule))
    return [Entry(source=r.source, rule=r.rule, reason=r.reason, run_id=r.run_id, point_id=r.point_id,
                  digest=r.digest, line=r.line, first_seen=r.first_seen, last_seen=r.last_seen, times=r.times)
            for r in rows]


# ------------------------------------------------------------------------------------------------ copy


def table_rows(conn: sa.Connection, table: sa.Table, run_id: str, cols: Sequence[str]) -> list[tuple[Any, ...]]:
    """Every row of ``table`` for one run (the columns ``cols``, in that order; absent ones NULL)."""
    q = sa.select(*(table.c[c] for c in cols)).where(table.c.run_id == run_id)
    return [tuple(row) for row in conn.execute(q)]


# ------------------------------------------------------------------------------------------------ reliability


class OutcomeCount(NamedTuple):
    """How many points of a run ended in a state on one hardware and runner (failure class: failed/skipped only)."""

    run_id: str
    started_at: float | None
    hardware: str
    runner: str
    state: str
    failure_class: str | None
    n: int


def outcome_counts(conn: sa.Connection) -> list[OutcomeCount]:
    """Points per (measured run, hardware, runner, state, failure class), runs in start order."""
    f, runs = schema.failures, schema.runs
    q = (sa.select(p.c.run_id, runs.c.started_at, p.c.hardware, p.c.runner, p.c.state, f.c.failure_class,
                   sa.func.count())
         .select_from(p.join(runs, runs.c.run_id == p.c.run_id)
                      .outerjoin(f, sa.and_(f.c.run_id == p.c.run_id, f.c.point_id == p.c.point_id)))
         .where(runs.c.origin == "measured")
         .group_by(p.c.run_id, runs.c.started_at, p.c.hardware, p.c.runner, p.c.state, f.c.failure_class)
         .order_by(runs.c.started_at, p.c.run_id, p.c.hardware, p.c.runner, p.c.state, f.c.failure_class))
    return [OutcomeCount._make(row) for row in conn.execute(q)]


class AcceptanceRow(NamedTuple):
    """One role's speculative-decoding acceptance of a point (the ``acceptance`` table, revision 0010)."""

    run_id: str
    point_id: str
    role: str
    method: str | None
    acceptance: str | None  # measured | synthetic
    synthetic_al: float | None
    via: str | None
    state: str
    reason: str
    acceptance_length: float | None
    acceptance_length_lo: float | None
    acceptance_length_hi: float | None
    acceptance_rate: float | None
    per_position_json: str


def acceptance(conn: sa.Connection, run_ids: Sequence[str] | None, have: Have = None) -> list[AcceptanceRow]:
    """Every acceptance row of the given runs (none before revision 0010)."""
    if not _has(have, "acceptance"):
        return []
    a = schema.acceptance
    q = (sa.select(a.c.run_id, a.c.point_id, a.c.role, a.c.method, a.c.acceptance, a.c.synthetic_al, a.c.via,
                   a.c.state, a.c.reason, a.c.acceptance_length, a.c.acceptance_length_lo, a.c.acceptance_length_hi,
                   a.c.acceptance_rate, a.c.per_position_json)
         .where(_runs_in(a.c.run_id, run_ids)).order_by(a.c.run_id, a.c.point_id, a.c.role))
    return [AcceptanceRow._make(row) for row in conn.execute(q)]
