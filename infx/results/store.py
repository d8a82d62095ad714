"""The results store: one SQLite database (stdlib ``sqlite3``, WAL) at ``RESULTS/infx.db``.

Tables (see ``MIGRATIONS``): ``runs`` (the manifest), ``points`` (identity columns: model,
hardware, framework, precision, topology, conc, scenario, image... plus ``point.json``),
``results`` (the metrics the analysis reads, checks, versions), ``startup`` (engine start-up
facts) and ``failures`` (failed / skipped points with reason and log tail). The database is an
index of the results directory: the files (``result.json``, ``records.jsonl.gz``) stay the
source of truth and ``infx ingest`` rebuilds it from them.

Ingest is idempotent: every point row carries a digest of the files it came from; an unchanged
point is not touched, a changed one is replaced. A point is validated completely before anything
is written, and all its rows are written in one transaction (batched with other points' rows for
speed), so a point is either fully in the database or not at all. Bad files are reported (``FILE:LINE:COL: error: ...``) and skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.point import Point
from infx.metrics import cipack
from infx.metrics.result import BenchResult
from infx.results.evalrows import (
    ANSWER_COLS,
    EVAL_COLS,
    MIGRATION_3,
    EvalBundle,
    eval_rows,
    read_eval_bundle,
)
from infx.results.layout import (
    MANIFEST,
    POINT_FILE,
    POINTS,
    RESULT_FILE,
    STATUS_FILE,
    PointFile,
    PointStatus,
    ResultsDir,
    RunManifest,
)
from infx.results.receipt import RECEIPT_FILE, has_receipt, verify_point_dir
from infx.results.sqlite_open import LOCK_WAIT_S, open_for_writing
from infx.results.telemetry_rows import COLUMNS as _TELEMETRY_COLS
from infx.results.telemetry_rows import MIGRATION_4, telemetry_row

# Ordered migration steps: (version, statements). Never edit a released step; append a new one.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (1, [
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            digest TEXT NOT NULL,
            infx_version TEXT, git_commit TEXT, catalog_hash TEXT, recipe_hash TEXT,
            engine_version TEXT, started_at REAL, ended_at REAL,
            official INTEGER NOT NULL, pr_number INTEGER, pr_branch TEXT, pr_sha TEXT, pr_url TEXT,
            baseline_run TEXT,
            manifest_json TEXT NOT NULL)""",
        """CREATE TABLE points (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL,
            digest TEXT NOT NULL,
            model TEXT NOT NULL, model_prefix TEXT NOT NULL, hardware TEXT NOT NULL, runner TEXT NOT NULL,
            framework TEXT NOT NULL, precision TEXT NOT NULL,
            topology TEXT NOT NULL, tp INTEGER, pp INTEGER, ep INTEGER, dp_attn INTEGER,
            dcp INTEGER, pcp INTEGER, multinode INTEGER NOT NULL, gpus_per_server INTEGER NOT NULL,
            conc INTEGER NOT NULL, scenario TEXT NOT NULL, isl INTEGER, osl INTEGER,
            spec_decoding TEXT, kv_offloading TEXT, image TEXT NOT NULL,
            launch_fingerprint TEXT, state TEXT NOT NULL,
            point_json TEXT NOT NULL,
            PRIMARY KEY (run_id, point_id))""",
        """CREATE TABLE results (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL,
            complete INTEGER NOT NULL, started_at REAL, ended_at REAL, duration_s REAL,
            issued INTEGER, completed INTEGER, failed INTEGER, success_rate REAL,
            request_per_s REAL, output_tok_per_s REAL, input_tok_per_s REAL, total_tok_per_s REAL,
            interactivity_median REAL, interactivity_p90 REAL,
            ttft_median REAL, ttft_p90 REAL, ttft_p99 REAL,
            tpot_median REAL, tpot_p90 REAL, tpot_p99 REAL,
            itl_median REAL, itl_p90 REAL, itl_p99 REAL,
            e2el_median REAL, e2el_p90 REAL, e2el_p99 REAL,
            error_classes_json TEXT NOT NULL, checks_json TEXT NOT NULL, versions_json TEXT NOT NULL,
            PRIMARY KEY (run_id, point_id))""",
        """CREATE TABLE startup (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL,
            kv_cache_tokens INTEGER, kv_cache_gib REAL, max_concurrency REAL,
            model_load_gib REAL, startup_s REAL, engine_version TEXT, facts_json TEXT NOT NULL,
            PRIMARY KEY (run_id, point_id))""",
        """CREATE TABLE failures (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL,
            state TEXT NOT NULL, failure_class TEXT, reason TEXT NOT NULL, log_tail TEXT NOT NULL,
            PRIMARY KEY (run_id, point_id))""",
    ]),
    (2, [
        "CREATE INDEX points_identity ON points (model_prefix, hardware, framework, precision, scenario, isl, osl)",
        "CREATE INDEX points_state ON points (run_id, state)",
    ]),
    (3, MIGRATION_3),  # accuracy evals: infx/results/evalrows.py
    (4, MIGRATION_4),  # telemetry: power/energy (InferenceX keys) and engine state per point
    (5, [  # issue 15: multi-role deployments, GPUs per role (per-role normalisation)
        "ALTER TABLE points ADD COLUMN prefill_gpus INTEGER",
        "ALTER TABLE points ADD COLUMN decode_gpus INTEGER",
        "ALTER TABLE points ADD COLUMN disagg INTEGER NOT NULL DEFAULT 0",
    ]),
    (6, [  # InferenceX interop (infx.interop): imported runs are marked and keep their published files
        "ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'measured'",
        """CREATE TABLE imported_agg (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL,
            name TEXT NOT NULL, source TEXT NOT NULL, agg_json TEXT NOT NULL,
            PRIMARY KEY (run_id, point_id))""",
    ]),
    (7, [  # issue 21: trials and confidence intervals (every trial kept; result.json ``stats`` as JSON)
        "ALTER TABLE results ADD COLUMN trials INTEGER NOT NULL DEFAULT 1",
        # the intervals the analysis reads, packed (infx.results.store.pack_ci): method, df and the 95 %
        # bounds of output/total tok/s and interactivity median/P90; one BLOB keeps ingest cheap
        "ALTER TABLE results ADD COLUMN ci BLOB",
        """CREATE TABLE trials (
            run_id TEXT NOT NULL, point_id TEXT NOT NULL, trial INTEGER NOT NULL,
            started_at REAL, ended_at REAL, warmup INTEGER NOT NULL, duration_s REAL,
            issued INTEGER, completed INTEGER, failed INTEGER,
            request_per_s REAL, output_tok_per_s REAL, total_tok_per_s REAL,
            interactivity_median REAL, interactivity_p90 REAL,
            ttft_median REAL, ttft_p90 REAL, ttft_p99 REAL, tpot_median REAL, tpot_p90 REAL,
            itl_median REAL, e2el_median REAL, e2el_p90 REAL,
            PRIMARY KEY (run_id, point_id, trial))""",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_RESULT_COLS = (
    "run_id", "point_id", "complete", "started_at", "ended_at", "duration_s",
    "issued", "completed", "failed", "success_rate",
    "request_per_s", "output_tok_per_s", "input_tok_per_s", "total_tok_per_s",
    "interactivity_median", "interactivity_p90",
    "ttft_median", "ttft_p90", "ttft_p99", "tpot_median", "tpot_p90", "tpot_p99",
    "itl_median", "itl_p90", "itl_p99", "e2el_median", "e2el_p90", "e2el_p99",
    "error_classes_json", "checks_json", "versions_json", "trials", "ci",
)
_TRIAL_COLS = (
    "run_id", "point_id", "trial", "started_at", "ended_at", "warmup", "duration_s", "issued", "completed", "failed",
    "request_per_s", "output_tok_per_s", "total_tok_per_s", "interactivity_median", "interactivity_p90",
    "ttft_median", "ttft_p90", "ttft_p99", "tpot_median", "tpot_p90", "itl_median", "e2el_median", "e2el_p90",
)
_POINT_COLS = (
    "run_id", "point_id", "digest", "model", "model_prefix", "hardware", "runner", "framework",
    "precision", "topology", "tp", "pp", "ep", "dp_attn", "dcp", "pcp", "multinode",
    "gpus_per_server", "conc", "scenario", "isl", "osl", "spec_decoding", "kv_offloading",
    "image", "launch_fingerprint", "state", "point_json", "prefill_gpus", "decode_gpus", "disagg",
)


def _insert(table: str, cols: tuple[str, ...]) -> str:
    return f"INSERT OR REPLACE INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"


_STARTUP_COLS = ("run_id", "point_id", "kv_cache_tokens", "kv_cache_gib", "max_concurrency", "model_load_gib",
                 "startup_s", "engine_version", "facts_json")
_FAILURE_COLS = ("run_id", "point_id", "state", "failure_class", "reason", "log_tail")
# (table, columns, _Rows attribute) of every per-point table, in write order
_POINT_TABLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("points", _POINT_COLS, "points"),
    ("results", _RESULT_COLS, "results"),
    ("startup", _STARTUP_COLS, "startup"),
    ("failures", _FAILURE_COLS, "failures"),
    ("telemetry", _TELEMETRY_COLS, "telemetry"),
    ("evals", EVAL_COLS, "evals"),
    ("eval_answers", ANSWER_COLS, "answers"),
    ("trials", _TRIAL_COLS, "trials"),
)


_STORABLE = frozenset({type(None), int, float, str, bytes, bool})


class _Rows:
    """The table rows of a batch of points, built before the transaction starts."""

    def __init__(self) -> None:
        self.points: list[tuple[Any, ...]] = []
        self.results: list[tuple[Any, ...]] = []
        self.startup: list[tuple[Any, ...]] = []
        self.failures: list[tuple[Any, ...]] = []
        self.telemetry: list[tuple[Any, ...]] = []
        self.evals: list[tuple[Any, ...]] = []
        self.answers: list[tuple[Any, ...]] = []
        self.trials: list[tuple[Any, ...]] = []
        self._topology: dict[tuple[Any, ...], str] = {}
        self._json: dict[tuple[Any, ...], str] = {}  # small JSON columns repeat: encode each once
        #: Bundles whose rows SQLite cannot hold (an integer past 64 bits, a mapping where a value
        #: belongs, a telemetry block of the wrong shape), each with the reason; their rows are dropped.
        self.rejected: list[tuple[PointBundle, str]] = []

    def _json_map(self, d: dict[str, Any]) -> str:
        if not d:
            return "{}"
        key = ("map", *d.items())
        text = self._json.get(key)
        if text is None:
            text = self._json[key] = json.dumps(d)
        return text

    def _json_checks(self, r: BenchResult) -> str:
        if not r.checks:
            return "[]"
        key = ("checks", *((c.name, c.status, c.detail) for c in r.checks))
        text = self._json.get(key)
        if text is None:
            text = self._json[key] = json.dumps([c.model_dump() for c in r.checks])
        return text

    def add(self, b: PointBundle) -> None:
        """Add the rows of one bundle, or reject it whole (see :attr:`rejected`)."""
        marks = [len(getattr(self, attr)) for _, _, attr in _POINT_TABLES]
        try:
            self._add(b)
            problem = self._unstorable(marks)
        except (AttributeError, TypeError, ValueError, KeyError, OverflowError) as exc:
            problem = f"cannot be stored: {type(exc).__name__}: {exc}"
        if problem:
            for (_, _, attr), mark in zip(_POINT_TABLES, marks):
                del getattr(self, attr)[mark:]
            self.rejected.append((b, problem))

    def _unstorable(self, marks: list[int]) -> str | None:
        for (table, cols, attr), mark in zip(_POINT_TABLES, marks):
            for row in getattr(self, attr)[mark:]:
                for col, v in zip(cols, row):
                    t = type(v)
                    if t is int and not -(2**63) <= v < 2**63:
                        return f"{table}.{col} = {str(v)[:24]}... is beyond SQLite's 64-bit integers"
                    if t not in _STORABLE:
                        return f"{table}.{col} holds a {t.__name__}, which SQLite cannot store"
        return None

    def _add(self, b: PointBundle) -> None:
        p, s, r = b.point, b.status, b.result
        key = (b.run_id, p.point_id)
        if p.multinode:
            topo = topology_label(p)
        else:
            tkey = (p.tp, p.pp, p.ep, p.dp_attn, p.pcp_size, p.dcp_size)
            topo = self._topology.get(tkey)
            if topo is None:
                topo = self._topology[tkey] = topology_label(p)
        self.points.append((
            b.run_id, p.point_id, b.digest, p.model, p.model_prefix, hardware_of(p.runner), p.runner,
            p.framework, p.precision, topo, p.tp, p.pp, p.ep, int(p.dp_attn), p.dcp_size, p.pcp_size,
            int(p.multinode), p.gpus_per_server, point_conc(p, r), p.scenario_type, p.isl, p.osl,
            p.spec_decoding, p.kv_offloading, p.image, b.launch_fingerprint, s.state, b.point_json,
            *role_gpus_of(p)))
        if r is not None:
            m, t = r.metrics, r.metrics.throughput
            self.results.append((
                *key, int(r.complete), r.started_at, r.ended_at, t.duration_s,
                m.issued, m.completed, m.failed, m.success_rate,
                t.request_per_s, t.output_tok_per_s, t.input_tok_per_s, t.total_tok_per_s,
                m.interactivity_median, m.interactivity_p90,
                m.ttft_ms.median, m.ttft_ms.p90, m.ttft_ms.p99,
                m.tpot_ms.median, m.tpot_ms.p90, m.tpot_ms.p99,
                m.itl_ms.median, m.itl_ms.p90, m.itl_ms.p99,
                m.e2el_ms.median, m.e2el_ms.p90, m.e2el_ms.p99,
                self._json_map(m.error_classes),
                self._json_checks(r), self._json_map(r.versions), max(1, len(r.trials)), pack_ci(r)))
            for tr in r.trials:
                tm, tt = tr.metrics, tr.metrics.throughput
                self.trials.append((
                    *key, tr.trial, tr.started_at, tr.ended_at, int(tr.warmup), tt.duration_s,
                    tm.issued, tm.completed, tm.failed, tt.request_per_s, tt.output_tok_per_s, tt.total_tok_per_s,
                    tm.interactivity_median, tm.interactivity_p90, tm.ttft_ms.median, tm.ttft_ms.p90,
                    tm.ttft_ms.p99, tm.tpot_ms.median, tm.tpot_ms.p90, tm.itl_ms.median, tm.e2el_ms.median,
                    tm.e2el_ms.p90))
            trow = telemetry_row(b.run_id, p.point_id, r.extra.telemetry)
            if trow is not None:
                self.telemetry.append(trow)
        if s.startup is not None:
            su = s.startup
            self.startup.append((*key, su.kv_cache_tokens, su.kv_cache_gib, su.max_concurrency, su.model_load_gib,
                                 su.startup_s, su.engine_version, su.model_dump_json()))
        if s.state != "done":
            self.failures.append((*key, s.state, s.failure_class, s.reason, s.log_tail))
        if b.evaluation is not None:
            row, answers = eval_rows(b.run_id, p.point_id, b.evaluation)
            self.evals.append(row)
            self.answers.extend(answers)


def pack_ci(r: BenchResult) -> bytes | None:
    """The intervals the analysis reads, packed (:mod:`infx.metrics.cipack`); None without ``stats``."""
    return r.packed_ci()


def unpack_ci(blob: bytes) -> tuple[str, float | None, list[tuple[float, float] | None]]:
    """(method, df, bounds relative to the mean per ``CI_KEYS``) of :func:`pack_ci`."""
    return cipack.unpack(blob)


# --------------------------------------------------------------------------- identity


@functools.lru_cache(maxsize=1024)
def hardware_of(runner: str) -> str:
    """``cluster:mi355x-amds`` -> ``mi355x``; ``h200-multinode`` -> ``h200``."""
    name = runner.split(":", 1)[-1]
    return name.split("-", 1)[0].split("_", 1)[0] or name


def role_gpus_of(point: Point) -> tuple[int | None, int | None, int]:
    """(prefill GPUs, decode GPUs, disaggregated) of a multinode point; (None, None, 0) single-node.
    A row of a disagg entry with an empty pool (``num-worker: 0``) is aggregated."""
    if point.prefill is None or point.decode is None:
        return None, None, 0
    p, d = point.prefill.gpus, point.decode.gpus
    return p, d, int(point.disagg and p > 0 and d > 0)


def topology_label(point: Point) -> str:
    """A short, stable name for a point's parallel layout: ``TP=4``, ``TP=8 EP=8 DP-attn``,
    ``1xP(TP=4)+2xD(TP=8)``. Only non-default dimensions appear."""
    if point.multinode and point.prefill is not None and point.decode is not None:
        def worker(tag: str, w: Any) -> str:
            inner = [f"TP={w.tp}"] + ([f"EP={w.ep}"] if w.ep > 1 else []) + (["DP-attn"] if w.dp_attn else [])
            if w.pp > 1:
                inner.append(f"PP={w.pp}")
            return f"{w.num_worker}x{tag}({' '.join(inner)})"
        return f"{worker('P', point.prefill)}+{worker('D', point.decode)}"
    parts = [f"TP={point.tp or 1}"]
    if point.pp > 1:
        parts.append(f"PP={point.pp}")
    if point.ep > 1:
        parts.append(f"EP={point.ep}")
    if point.dp_attn:
        parts.append("DP-attn")
    if point.pcp_size > 1:
        parts.append(f"PCP={point.pcp_size}")
    if point.dcp_size > 1:
        parts.append(f"DCP={point.dcp_size}")
    return " ".join(parts)


def point_conc(point: Point, result: BenchResult | None) -> int:
    """The concurrency of a measured point: the single ``conc`` of its row, else what the bench ran."""
    if isinstance(point.conc, int):
        return point.conc
    if result is not None and result.config.concurrency is not None:
        return result.config.concurrency
    return point.concs[0]


# --------------------------------------------------------------------------- ingest report


@dataclass
class IngestReport:
    ingested: int = 0
    unchanged: int = 0
    skipped: int = 0
    pending: int = 0  # point directories without status.json yet (in progress)
    runs: int = 0
    problems: list[Diagnostic] = field(default_factory=list)

    def merge(self, other: IngestReport) -> None:
        self.ingested += other.ingested
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.pending += other.pending
        self.runs += other.runs
        self.problems.extend(other.problems)

    def summary(self) -> str:
        return (f"{self.runs} run(s): {self.ingested} point(s) ingested, {self.unchanged} unchanged, "
                f"{self.skipped} skipped, {self.pending} in progress")


@dataclass(frozen=True)
class PointBundle:
    """Everything one point directory holds that goes into the database, already validated
    (``point_json``: the PointFile text, stored verbatim)."""

    run_id: str
    point: Point
    status: PointStatus
    result: BenchResult | None
    launch_fingerprint: str | None
    digest: str
    point_json: str
    evaluation: EvalBundle | None = None  # the point's accuracy eval, when it ran


def bundle_digest(*parts: bytes | str | None) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = b"" if part is None else part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def make_bundle(run_id: str, point: Point, status: PointStatus, result: BenchResult | None,
                launch_fingerprint: str | None = None) -> PointBundle:
    """Build a bundle from objects in memory (what ``infx run`` has after a point)."""
    lf = launch_fingerprint or status.launch_fingerprint
    point_json = PointFile.of(point, lf).model_dump_json()
    status_json = status.model_dump_json()
    result_json = result.model_dump_json() if result is not None else None
    return PointBundle(run_id, point, status, result, lf, bundle_digest(point_json, status_json, result_json),
                       point_json)


def read_bundle(results: ResultsDir, run_id: str, point_id: str) -> PointBundle:
    """Read and validate one point directory; raises InfxError (nothing written) when bad."""
    d = results.point_dir(run_id, point_id)
    if has_receipt(d):  # a bundle's receipt must verify; points without one (older results) still ingest
        check = verify_point_dir(d)
        if not check.ok:
            raise InfxError(Diagnostic(f"point {point_id} refused: {check.reason()}", str(d / RECEIPT_FILE)))
    pf = results.read_point(run_id, point_id)
    status = results.read_status(run_id, point_id)
    result: BenchResult | None = None
    result_text: str | None = None
    evaluation = read_eval_bundle(d)
    eval_only = pf.typed().eval_only and not (d / RESULT_FILE).is_file()
    if status.state == "done" and not eval_only:
        result = results.read_result(run_id, point_id)
        if not result.complete:
            raise InfxError(Diagnostic("partial result (complete: false): not ingested",
                                       str(d / RESULT_FILE), path=("complete",)))
        result_text = (d / RESULT_FILE).read_text(encoding="utf-8")
    point_text = (d / POINT_FILE).read_text(encoding="utf-8")
    status_text = (d / STATUS_FILE).read_text(encoding="utf-8")
    lf = pf.launch_fingerprint or status.launch_fingerprint
    digest = bundle_digest(point_text, status_text, result_text, *(evaluation.texts if evaluation else ()))
    return PointBundle(run_id, pf.typed(), status, result, lf, digest, point_text, evaluation)


# --------------------------------------------------------------------------- store


def store_error(path: Path, exc: BaseException) -> InfxError:
    """A SQLite or OS error on the store as one line naming it."""
    msg = str(exc) or type(exc).__name__
    hint = ""
    if "not a database" in msg or "malformed" in msg:
        hint = " (not an infx results database, or damaged: move it away and run `infx ingest` again)"
    elif "locked" in msg or "busy" in msg:
        hint = " (another infx process holds it: wait for it, or stop it)"
    return InfxError(Diagnostic(f"results store {path}: {msg}{hint}", str(path)))


@functools.lru_cache(maxsize=1)
def _expected_columns() -> dict[str, frozenset[str]]:
    """Tables and columns of a store at :data:`SCHEMA_VERSION` (the migrations applied in memory)."""
    conn = sqlite3.connect(":memory:")
    try:
        for _, statements in MIGRATIONS:
            for sql in statements:
                conn.execute(sql)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: frozenset(r[1] for r in conn.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        conn.close()


class Store:
    """The SQLite store. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path, *, readonly: bool = False, schema_target: int | None = None):
        self.path = Path(path)
        self.readonly = readonly
        self.rejected: list[tuple[PointBundle, str]] = []
        if self.path.exists() and not self.path.is_file():
            raise InfxError(Diagnostic(f"results store {self.path} is not a file (a directory is in its place)",
                                       str(self.path)))
        try:
            if readonly:
                if not self.path.is_file():
                    raise InfxError(Diagnostic(f"no results database at {self.path} (run `infx ingest` first)"))
                self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = open_for_writing(self.path, lock_wait_s=LOCK_WAIT_S)
                self.migrate(schema_target)
            self.conn.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT_S * 1000)}")
            self._check_tables(schema_target)
        except (sqlite3.Error, OSError) as exc:
            conn = getattr(self, "conn", None)
            if conn is not None:
                conn.close()
            raise store_error(self.path, exc) from None
        except InfxError:
            conn = getattr(self, "conn", None)
            if conn is not None:
                conn.close()
            raise

    def _check_tables(self, schema_target: int | None) -> None:
        """A store at this infx's schema must have every table and column it defines: one that lost
        a table or column (edited by hand, or half-restored) is refused, never half-used."""
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise InfxError(Diagnostic(f"results store {self.path}: database schema {current} is newer than this "
                                       f"infx ({SCHEMA_VERSION}); upgrade infx", str(self.path)))
        if current == 0 and self.readonly:
            raise InfxError(Diagnostic(f"results store {self.path} is not an infx results database "
                                       "(no schema version)", str(self.path)))
        if current < SCHEMA_VERSION or schema_target is not None:
            return
        have = self._columns()
        for table, cols in _expected_columns().items():
            if table not in have:
                raise InfxError(Diagnostic(f"results store {self.path} is damaged: table '{table}' is missing "
                                           "(delete the file and run `infx ingest` again)", str(self.path)))
            missing = sorted(cols - have[table])
            if missing:
                raise InfxError(Diagnostic(f"results store {self.path} is damaged: table '{table}' has no column "
                                           f"'{missing[0]}' (delete the file and run `infx ingest` again)",
                                           str(self.path)))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # schema ----------------------------------------------------------------
    def schema_version(self) -> int:
        try:
            row = self.conn.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(row[0]) if row else 0

    def migrate(self, target: int | None = None) -> int:
        """Apply the pending migration steps in order, each in its own transaction. Safe when
        several processes open the database at once (the version is re-read under the lock)."""
        self.conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise InfxError(Diagnostic(f"{self.path}: database schema {current} is newer than this infx "
                                       f"({SCHEMA_VERSION}); upgrade infx"))
        for version, statements in MIGRATIONS:
            if version <= current or (target is not None and version > target):
                continue
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.schema_version() >= version:  # another process got there first
                    self.conn.execute("COMMIT")
                    current = self.schema_version()
                    continue
                for sql in statements:
                    self.conn.execute(sql)
                self.conn.execute("DELETE FROM schema_version")
                self.conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            current = version
        return current

    # writes ----------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def upsert_run(self, manifest: RunManifest, digest: str | None = None) -> bool:
        """Insert or replace a run row; False when it was already there unchanged."""
        text = manifest.model_dump_json()
        digest = digest or bundle_digest(text)
        row = self.conn.execute("SELECT digest FROM runs WHERE run_id=?", (manifest.run_id,)).fetchone()
        if row and row[0] == digest:
            return False
        pr = manifest.pr
        with self.transaction():
            self.conn.execute(
                _insert("runs", ("run_id", "digest", "infx_version", "git_commit", "catalog_hash",
                                 "recipe_hash", "engine_version", "started_at", "ended_at", "official",
                                 "pr_number", "pr_branch", "pr_sha", "pr_url", "baseline_run",
                                 "manifest_json")),
                (manifest.run_id, digest, manifest.infx_version, manifest.git_commit, manifest.catalog_hash,
                 manifest.recipe_hash, manifest.engine_version, manifest.started_at, manifest.ended_at,
                 int(manifest.official), pr.number if pr else None, pr.branch if pr else None,
                 pr.sha if pr else None, pr.url if pr else None, manifest.baseline_run, text))
        return True

    def add_points(self, bundles: Iterable[PointBundle], *, batch: int = 1000) -> tuple[int, int]:
        """Write validated bundles; returns (written, unchanged). Unchanged points (same digest)
        are not touched. Up to ``batch`` points share one transaction: a point is never
        half-written (all its rows go in the same transaction, or none)."""
        written = unchanged = 0
        pending: list[PointBundle] = []
        for b in bundles:
            pending.append(b)
            if len(pending) >= batch:
                w, u = self._write_batch(pending)
                written, unchanged = written + w, unchanged + u
                pending = []
        if pending:
            w, u = self._write_batch(pending)
            written, unchanged = written + w, unchanged + u
        return written, unchanged

    def _existing(self, bundles: list[PointBundle]) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], str] = {}
        by_run: dict[str, list[str]] = {}
        for b in bundles:
            by_run.setdefault(b.run_id, []).append(b.point.point_id)
        for run_id, ids in by_run.items():
            for i in range(0, len(ids), 900):
                part = ids[i:i + 900]
                q = f"SELECT point_id, digest FROM points WHERE run_id=? AND point_id IN ({', '.join('?' * len(part))})"
                for pid, digest in self.conn.execute(q, (run_id, *part)):
                    found[(run_id, pid)] = digest
        return found

    def _write_batch(self, bundles: list[PointBundle]) -> tuple[int, int]:
        c = self.conn
        # The digests are read under the write lock: read before it, a point another writer commits in
        # between would be missed as "replaced" and keep its old child rows (a failure row beside a result).
        with self.transaction():
            existing = self._existing(bundles)
            todo: dict[tuple[str, str], PointBundle] = {}
            for b in bundles:  # the last bundle of a point wins, as it would written one by one
                key = (b.run_id, b.point.point_id)
                if existing.get(key) != b.digest:
                    todo[key] = b
            unchanged = len(bundles) - len(todo)
            if not todo:
                return 0, unchanged
            rows = _Rows()
            for b in todo.values():
                rows.add(b)
            for b, _ in rows.rejected:  # nothing of a rejected point is written (nor its old rows dropped)
                todo.pop((b.run_id, b.point.point_id), None)
            self.rejected.extend(rows.rejected)
            replaced = [k for k in todo if k in existing]
            have = self._columns()
            for table, cols, attr in _POINT_TABLES:
                if table not in have:  # a store held at an older schema (schema_target) lacks later tables
                    if self.schema_version() >= SCHEMA_VERSION:
                        raise InfxError(Diagnostic(f"results store {self.path} is damaged: table '{table}' is "
                                                   "missing (delete the file and run `infx ingest` again)",
                                                   str(self.path)))
                    continue
                if table != "points":
                    c.executemany(f"DELETE FROM {table} WHERE run_id=? AND point_id=?", replaced)
                keep = [i for i, col in enumerate(cols) if col in have[table]]  # ... and later columns
                batch = getattr(rows, attr)
                if len(keep) < len(cols):
                    cols, batch = tuple(cols[i] for i in keep), [tuple(r[i] for i in keep) for r in batch]
                c.executemany(_insert(table, cols), batch)
        return len(todo), unchanged

    def _columns(self) -> dict[str, set[str]]:
        """Every table of this database with its columns."""
        tables = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: {r[1] for r in self.conn.execute(f"PRAGMA table_info({t})")} for t in tables}

    # ingest from files -------------------------------------------------------
    def ingest_run(self, results: ResultsDir, run_id: str) -> IngestReport:
        report = IngestReport()
        try:
            manifest = results.read_manifest(run_id)
        except InfxError as exc:
            report.problems.extend(exc.diagnostics)
            report.skipped += len(results.points(run_id))
            return report
        report.runs = 1
        self.upsert_run(manifest, bundle_digest((results.run_dir(run_id) / MANIFEST).read_bytes()))

        def bundles() -> Iterator[PointBundle]:
            for point_id in results.points(run_id):
                if not (results.point_dir(run_id, point_id) / STATUS_FILE).is_file():
                    report.pending += 1
                    continue
                try:
                    yield read_bundle(results, run_id, point_id)
                except InfxError as exc:
                    report.skipped += 1
                    report.problems.extend(exc.diagnostics)

        try:
            written, unchanged = self.add_points(bundles(), batch=500)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from None
        report.ingested += written
        report.unchanged += unchanged
        for b, problem in self.rejected:
            report.skipped += 1
            report.problems.append(Diagnostic(f"not ingested: {problem}",
                                              str(results.point_dir(b.run_id, b.point.point_id))))
        self.rejected.clear()
        return report

    def ingest_dir(self, root: str | Path, run_ids: list[str] | None = None) -> IngestReport:
        results = ResultsDir(root)
        report = IngestReport()
        for run_id in run_ids if run_ids is not None else results.runs():
            report.merge(self.ingest_run(results, run_id))
        if run_ids is None and results.root.is_dir():  # a run directory that lost its manifest: say so
            for d in sorted(results.root.iterdir()):
                if d.is_dir() and (d / POINTS).is_dir() and not (d / MANIFEST).is_file():
                    n = sum(1 for p in (d / POINTS).iterdir() if p.is_dir())
                    report.skipped += n
                    report.problems.append(Diagnostic(f"run directory without {MANIFEST}: its {n} point(s) "
                                                      "not ingested", str(d / MANIFEST)))
        return report

    # reads -------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT run_id FROM runs ORDER BY started_at, run_id")]

    def origin(self, run_id: str) -> str | None:
        """``measured`` (a run infx measured) or ``imported`` (external results, infx.interop); None: no such run."""
        row = self.conn.execute("SELECT origin FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return row[0] if row else None

    def measured_run_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT run_id FROM runs WHERE origin='measured' ORDER BY started_at, run_id")]

    def manifest(self, run_id: str) -> RunManifest | None:
        row = self.conn.execute("SELECT manifest_json FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return RunManifest.model_validate_json(row[0]) if row else None

    def counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("runs", "points", "results", "startup", "failures")}


def ingest_point(results_root: str | Path, run_id: str, point_id: str, *, store: Store | None = None) -> IngestReport:
    """Ingest one finished point directory (what ``infx run`` calls after each point). Also
    records the run's manifest the first time. Bad files are reported, never half-ingested."""
    results = ResultsDir(results_root)
    own = store is None
    st = store or Store(results.db_path)
    report = IngestReport()
    try:
        try:
            manifest = results.read_manifest(run_id)
        except InfxError as exc:
            report.problems.extend(exc.diagnostics)
            report.skipped += 1
            return report
        st.upsert_run(manifest, bundle_digest((results.run_dir(run_id) / MANIFEST).read_bytes()))
        report.runs = 1
        try:
            bundle = read_bundle(results, run_id, point_id)
        except InfxError as exc:
            report.problems.extend(exc.diagnostics)
            report.skipped += 1
            return report
        written, unchanged = st.add_points([bundle])
        report.ingested, report.unchanged = written, unchanged
        return report
    finally:
        if own:
            st.close()


def locate_results(path: str | Path) -> tuple[Path, list[str] | None]:
    """``infx ingest DIR`` accepts a results root or one run directory inside it."""
    p = Path(path)
    if not p.is_dir():
        raise InfxError(Diagnostic(f"{p}: not a directory"))
    if (p / MANIFEST).is_file() and (p / POINTS).is_dir():
        return p.parent, [p.name]
    return p, None


def require_results(root: str | Path, run_ids: list[str] | None = None) -> None:
    """For the read-only commands (``infx report``/``compare``): refuse, before any database is
    created, a directory that holds neither a run nor ``infx.db``."""
    results = ResultsDir(root)
    if run_ids or results.db_path.is_file() or results.runs():
        return
    raise InfxError(Diagnostic(f"{results.root}: no runs (no RUN/{MANIFEST} and no {results.db_path.name})"))
