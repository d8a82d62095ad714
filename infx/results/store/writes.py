"""Bundles to rows, and batched idempotent upserts: the store's write path, shared by both backends.

A batch of points is one transaction: it lands whole or not at all. Each point row carries the digest of the
files it came from, so writing a point again with the same digest changes nothing (re-ingest is a no-op) and a
changed point replaces all of its rows, never leaving an old child row beside a new one. Many processes may
write at once (sweeps on several Slurm nodes, CI jobs):

* **SQLite** takes the write lock first (``BEGIN IMMEDIATE``), then reads the stored digests, deletes the rows
  of replaced points and inserts (``executemany`` on the DB-API cursor, statements compiled from ``schema``);
  writers queue on the lock, one batch at a time.
* **PostgreSQL** reads the stored digests without a lock (so an unchanged batch costs one query), ``COPY``\\ s
  the points into a temporary stage and upserts them in key order with ``INSERT ... ON CONFLICT DO UPDATE ...
  WHERE digest differs RETURNING``: that locks every point row of the batch, in the same order in every writer
  (no deadlock), and names the points this batch wrote, inserted or replaced. Only their child rows are written
  (``COPY``), after the replaced points' old ones are deleted. Two writers of the same point serialise on its
  row; the second finds the same digest and writes nothing.

Both paths first write without checking each value (the fast path); when the driver refuses a row (an integer
past 64 bits, a mapping where a number belongs, a NUL in PostgreSQL text) the batch rolls back to a savepoint,
every point is checked (:func:`coerce_row`), the refused ones are set aside with the reason (the quarantine's
``unstorable`` rule) and the rest is written again.

Measured (``benchmarks/analysis_speed.py``): SQLAlchemy Core ``executemany`` of these rows ran at ~46k rows/s on
SQLite and ~19k on PostgreSQL, its ``RETURNING`` upsert (insertmanyvalues) at ~3k; the DB-API paths used here
at ~140k (SQLite ``executemany``) and ~60k (PostgreSQL ``COPY`` + upsert from the stage), before row building.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect

from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.results.acceptance_rows import acceptance_rows
from infx.results.evalrows import eval_rows
from infx.results.layout import RunManifest
from infx.results.store import schema
from infx.results.store.backend import Backend
from infx.results.store.bundles import (
    PointBundle,
    bundle_digest,
    hardware_of,
    pack_ci,
    point_conc,
    role_gpus_of,
    topology_label,
)
from infx.results.store.quarantine import Entry
from infx.results.store.snapshots import recipe_fingerprint, scope_key
from infx.results.telemetry_rows import telemetry_row

Key = tuple[str, str]
Row = tuple[Any, ...]
#: Tables held at an older revision (``Store(schema_target=N)``): table -> its columns; None: the head schema.
Columns = dict[str, frozenset[str]] | None

_TABLES = {t.name: t for t in schema.POINT_TABLES}
_CHUNK = 900  # keys per IN list (SQLite allows 32766 variables; PostgreSQL 65535)


# --------------------------------------------------------------------------------------------- rows


class RowBatch:
    """The rows of a batch of points, per table (``schema.POINT_TABLES`` order), built before the transaction."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Row]] = {name: [] for name in _TABLES}
        self.digests: dict[Key, str] = {}
        # recipe fingerprint -> the identity columns of its points (everything but concurrency, names, ids and
        # image is in the fingerprint, so every point of one recipe has the same identity)
        self._identity: dict[str, tuple[Row, Row, Row]] = {}
        self._json: dict[tuple[Any, ...], str] = {}  # small JSON columns repeat: encode each once
        #: (key, reason) of the points whose rows cannot be stored; none of their rows is written.
        self.rejected: list[tuple[Key, str]] = []

    @property
    def keys(self) -> list[Key]:
        return list(self.digests)

    # building -------------------------------------------------------------------------------------
    def add(self, b: PointBundle) -> None:
        """Add one bundle's rows, or reject it whole when they cannot be built (nothing of it is added)."""
        key = (b.run_id, b.point.point_id)
        try:
            built = self._build(b)
        except (AttributeError, TypeError, ValueError, KeyError, OverflowError) as exc:
            self.rejected.append((key, f"cannot be stored: {type(exc).__name__}: {exc}"))
            return
        rows = self.rows
        for name, new in built:
            if new:
                rows[name].extend(new)
        self.digests[key] = b.digest

    def _json_map(self, d: dict[str, Any]) -> str:
        if not d:
            return "{}"
        key = tuple(d.items())
        text = self._json.get(key)
        if text is None:
            text = self._json[key] = json.dumps(d)
        return text

    def _json_checks(self, r: BenchResult) -> str:
        checks = r.checks
        if not checks:
            return "[]"
        key = ("checks", *[(c.name, c.status, c.detail) for c in checks])
        text = self._json.get(key)
        if text is None:
            text = self._json[key] = json.dumps([c.model_dump() for c in checks])
        return text

    def _identity_of(self, p: Point, recipe: str) -> tuple[Row, Row, Row]:
        """(model .. gpus_per_server, scenario .. kv_offloading, prefill_gpus .. scope) of ``p``'s points row."""
        hardware = hardware_of(p.runner)
        prefill, decode, disagg = role_gpus_of(p)
        scope = scope_key(p.model, hardware, p.framework, p.precision, p.scenario_type, p.isl, p.osl,
                          p.spec_decoding, disagg, recipe)
        multinode = p.multinode
        return ((p.model, p.model_prefix, hardware, p.runner, p.framework, p.precision, topology_label(p), p.tp,
                 p.pp, p.ep, int(p.dp_attn), p.dcp_size, p.pcp_size, int(multinode), p.gpus_per_server),
                (p.scenario_type, p.isl, p.osl, p.spec_decoding, p.kv_offloading),
                (prefill, decode, disagg, recipe, scope))

    def _build(self, b: PointBundle) -> list[tuple[str, list[Row]]]:
        p, s, r = b.point, b.status, b.result
        run_id, point_id = b.run_id, p.point_id
        recipe = b.recipe or recipe_fingerprint(json.loads(b.point_json)["point"])
        ident = self._identity.get(recipe)
        if ident is None:
            ident = self._identity[recipe] = self._identity_of(p, recipe)
        head, seq, roles = ident
        out: list[tuple[str, list[Row]]] = [("points", [(
            run_id, point_id, b.digest, *head, point_conc(p, r), *seq, p.image, b.launch_fingerprint, s.state,
            b.point_json, *roles)])]
        if r is not None:
            m, t = r.metrics, r.metrics.throughput
            ttft, tpot, itl, e2el = m.ttft_ms, m.tpot_ms, m.itl_ms, m.e2el_ms
            out.append(("results", [(
                run_id, point_id, int(r.complete), r.started_at, r.ended_at, t.duration_s,
                m.issued, m.completed, m.failed, m.success_rate,
                t.request_per_s, t.output_tok_per_s, t.input_tok_per_s, t.total_tok_per_s,
                m.interactivity_median, m.interactivity_p90,
                ttft.median, ttft.p90, ttft.p99, tpot.median, tpot.p90, tpot.p99,
                itl.median, itl.p90, itl.p99, e2el.median, e2el.p90, e2el.p99,
                self._json_map(m.error_classes),
                self._json_checks(r), self._json_map(r.versions), max(1, len(r.trials)), pack_ci(r))]))
            if r.trials:
                out.append(("trials", [self._trial_row(run_id, point_id, tr) for tr in r.trials]))
            trow = telemetry_row(run_id, point_id, r.extra.telemetry)
            if trow is not None:
                out.append(("telemetry", [trow]))
            arows = acceptance_rows(run_id, point_id, r)
            if arows:
                out.append(("acceptance", arows))
        if s.startup is not None:
            su = s.startup
            out.append(("startup", [(run_id, point_id, su.kv_cache_tokens, su.kv_cache_gib, su.max_concurrency,
                                     su.model_load_gib, su.startup_s, su.engine_version, su.model_dump_json())]))
        if s.state != "done":
            out.append(("failures", [(run_id, point_id, s.state, s.failure_class, s.reason, s.log_tail)]))
        if b.evaluation is not None:
            row, answers = eval_rows(run_id, point_id, b.evaluation)
            out.append(("evals", [row]))
            out.append(("eval_answers", answers))
        return out

    @staticmethod
    def _trial_row(run_id: str, point_id: str, tr: Any) -> Row:
        tm, tt = tr.metrics, tr.metrics.throughput
        return (run_id, point_id, tr.trial, tr.started_at, tr.ended_at, int(tr.warmup), tt.duration_s,
                tm.issued, tm.completed, tm.failed, tt.request_per_s, tt.output_tok_per_s, tt.total_tok_per_s,
                tm.interactivity_median, tm.interactivity_p90, tm.ttft_ms.median, tm.ttft_ms.p90,
                tm.ttft_ms.p99, tm.tpot_ms.median, tm.tpot_ms.p90, tm.itl_ms.median, tm.e2el_ms.median,
                tm.e2el_ms.p90)

    # the slow path ----------------------------------------------------------------------------------
    def drop(self, keys: set[Key]) -> None:
        """Forget every row of ``keys``."""
        for name, rows in self.rows.items():
            self.rows[name] = [r for r in rows if (r[0], r[1]) not in keys]
        for k in keys:
            self.digests.pop(k, None)

    def check(self, kind: str) -> None:
        """Coerce every row to what the backend holds; reject (and drop) the points with a value it cannot."""
        bad: dict[Key, str] = {}
        for name, rows in self.rows.items():
            table = _TABLES[name]
            fixed = []
            for row in rows:
                key = (row[0], row[1])
                if key in bad:
                    continue
                try:
                    fixed.append(coerce_row(table, row, kind))
                except _Unstorable as exc:
                    bad[key] = str(exc)
            self.rows[name] = fixed
        self.drop(set(bad))
        self.rejected.extend(bad.items())


class _Unstorable(ValueError):
    pass


def coerce_row(table: sa.Table, row: Row, kind: str) -> Row:
    """``row`` as the backend stores it, or :class:`_Unstorable` naming the column and why. Both backends hold
    64-bit integers, doubles, text and bytes; PostgreSQL text cannot hold NUL (replaced by U+FFFD, as a log tail
    may carry one) and its integer columns take no fractions."""
    out = list(row)
    for i, (col, v) in enumerate(zip(table.columns, row, strict=True)):
        if v is None:
            continue
        t = type(v)
        where = f"{table.name}.{col.name}"
        if t is bool:
            v = out[i] = int(v)
            t = int
        if t is int and not -(2**63) <= v < 2**63:
            raise _Unstorable(f"{where} = {str(v)[:24]}... is beyond the store's 64-bit integers")
        if t not in (int, float, str, bytes):
            raise _Unstorable(f"{where} holds a {t.__name__}, which the store cannot hold")
        if kind != "postgresql":
            continue
        ctype = col.type
        if isinstance(ctype, sa.BigInteger | sa.Integer):
            if t is float and math.isfinite(v) and v == int(v):
                out[i] = int(v)
            elif t is not int:
                raise _Unstorable(f"{where} = {str(v)[:24]!r} is not an integer")
        elif isinstance(ctype, sa.Double):
            if t not in (int, float):
                raise _Unstorable(f"{where} = {str(v)[:24]!r} is not a number")
        elif isinstance(ctype, sa.Text):
            if t is not str:
                raise _Unstorable(f"{where} holds a {t.__name__} where text belongs")
            if "\x00" in v:
                out[i] = v.replace("\x00", "\ufffd")
        elif isinstance(ctype, sa.LargeBinary) and t is not bytes:
            raise _Unstorable(f"{where} holds a {t.__name__} where bytes belong")
    return tuple(out)


def bundle_rows(bundles: Iterable[PointBundle]) -> RowBatch:
    batch = RowBatch()
    for b in bundles:
        batch.add(b)
    return batch


# ------------------------------------------------------------------------------------------ statements


@lru_cache(maxsize=64)
def _sqlite_insert(table: str, cols: tuple[str, ...]) -> str:
    t = schema.metadata.tables[table]
    return str(sa.insert(t).compile(dialect=sqlite_dialect.dialect(), column_keys=list(cols)))


@lru_cache(maxsize=64)
def _pg_copy(table: str, cols: tuple[str, ...]) -> tuple[str, list[str]]:
    """``COPY ... FROM STDIN (FORMAT BINARY)`` of ``cols`` and their PostgreSQL types (binary: no float is turned
    into text and back; a value of the wrong type is refused by the driver, and the slow path coerces it)."""
    # every name is the schema's own (lower-case, no quoting needed); the stage table has the points' columns
    types = {c.name: c.type for c in schema.metadata.tables.get(table, schema.points).columns}
    names = {sa.BigInteger: "int8", sa.Integer: "int4", sa.Double: "float8", sa.LargeBinary: "bytea", sa.Text: "text"}
    pg = [next(n for t, n in names.items() if isinstance(types[c], t)) for c in cols]
    return f"COPY {table} ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)", pg


def copy_rows(cur: Any, table: str, cols: tuple[str, ...], rows: Iterable[Row], *, into: str | None = None) -> None:
    """Binary ``COPY`` of ``rows`` (columns ``cols`` of ``table``) on a psycopg cursor, into ``table`` (or a copy
    of it named ``into``)."""
    sql, types = _pg_copy(table, cols)
    if into is not None:
        sql = sql.replace(f"COPY {table} ", f"COPY {into} ", 1)
    with cur.copy(sql) as cp:
        cp.set_types(types)
        for r in rows:
            cp.write_row(r)


def _stage() -> sa.Table:
    """A session-temporary copy of ``points`` (no constraints) that a batch is ``COPY``'d into."""
    return sa.Table("infx_stage_points", sa.MetaData(),
                    *(sa.Column(c.name, c.type) for c in schema.points.columns),
                    prefixes=["TEMPORARY"], postgresql_on_commit="DELETE ROWS")


STAGE = _stage()


@lru_cache(maxsize=8)
def _pg_upsert(cols: tuple[str, ...]) -> sa.Insert:
    pts = schema.points
    src = sa.select(*(STAGE.c[c] for c in cols)).order_by(STAGE.c.run_id, STAGE.c.point_id)
    ins = postgresql.insert(pts).from_select(list(cols), src)
    return ins.on_conflict_do_update(
        index_elements=[pts.c.run_id, pts.c.point_id],
        set_={c: ins.excluded[c] for c in cols if c not in ("run_id", "point_id")},
        where=pts.c.digest.is_distinct_from(ins.excluded.digest),
    ).returning(pts.c.run_id, pts.c.point_id, sa.literal_column("xmax") == sa.literal_column("0"))


def _keys_in(table: sa.Table, keys: Sequence[Key]) -> sa.ColumnElement[bool]:
    return sa.tuple_(table.c.run_id, table.c.point_id).in_(keys)


# ----------------------------------------------------------------------------------------------- writes


@dataclass
class Outcome:
    written: int = 0
    unchanged: int = 0
    rejected: list[tuple[Key, str]] = field(default_factory=list)


_DIGESTS = (sa.select(schema.points.c.point_id, schema.points.c.digest)
            .where(schema.points.c.run_id == sa.bindparam("run"),
                   schema.points.c.point_id.in_(sa.bindparam("ids", expanding=True))))
_PG_DIGESTS = (sa.select(schema.points.c.point_id, schema.points.c.digest)  # one array parameter, not 400 binds
               .where(schema.points.c.run_id == sa.bindparam("run"),
                      schema.points.c.point_id == sa.any_(sa.bindparam("ids", type_=postgresql.ARRAY(sa.Text)))))


def stored_digests(conn: sa.Connection, keys: Iterable[Key]) -> dict[Key, str]:
    """(run, point) -> the digest stored for it, for the keys the store has."""
    by_run: dict[str, list[str]] = {}
    for run_id, point_id in keys:
        by_run.setdefault(run_id, []).append(point_id)
    found: dict[Key, str] = {}
    pg = conn.dialect.name == "postgresql"
    stmt, chunk = (_PG_DIGESTS, 5000) if pg else (_DIGESTS, _CHUNK)
    for run_id, ids in by_run.items():
        for i in range(0, len(ids), chunk):
            for pid, digest in conn.execute(stmt, {"run": run_id, "ids": ids[i:i + chunk]}):
                found[(run_id, pid)] = digest
    return found


def write_bundles(backend: Backend, bundles: Sequence[PointBundle], columns: Columns = None) -> Outcome:
    """Write one batch of bundles in one transaction (see the module docstring)."""
    def build(todo: dict[Key, PointBundle]) -> RowBatch:
        return bundle_rows(todo[k] for k in sorted(todo))

    return _write(backend, [((b.run_id, b.point.point_id), b.digest, b) for b in bundles], build, columns)


def write_rows(backend: Backend, batch: RowBatch, columns: Columns = None) -> Outcome:
    """Write rows read from another store (``infx store copy``), by the same rules as bundles."""
    def build(todo: dict[Key, Key]) -> RowBatch:
        out = RowBatch()
        for name, rows in batch.rows.items():
            out.rows[name] = [r for r in rows if (r[0], r[1]) in todo]
        out.digests = {k: batch.digests[k] for k in sorted(todo)}
        return out

    return _write(backend, [(k, d, k) for k, d in batch.digests.items()], build, columns)


def _write(backend: Backend, items: list[tuple[Key, str, Any]], build: Callable[[dict[Key, Any]], RowBatch],
           columns: Columns) -> Outcome:
    with backend.write() as conn:
        # SQLite: read under the write lock (BEGIN IMMEDIATE), so a point another writer commits meanwhile
        # cannot be missed as "replaced" and keep its old child rows. PostgreSQL: the upsert decides.
        existing = stored_digests(conn, (k for k, _, _ in items))
        todo: dict[Key, Any] = {}
        for key, digest, item in items:  # the last one of a point wins, as it would written one by one
            if existing.get(key) != digest:
                todo[key] = item
            else:
                todo.pop(key, None)
        rejected: list[tuple[Key, str]] = []
        written = 0
        if todo:
            rows = build(todo)
            rejected = list(rows.rejected)
            for attempt in (0, 1):
                try:
                    with conn.begin_nested():
                        if backend.kind == "postgresql":
                            written = _pg_put(conn, backend.raw, rows, columns)
                        else:
                            written = _sqlite_put(conn, backend.raw, rows, existing, columns)
                    break
                except _data_errors(backend.kind):
                    if attempt:
                        raise
                    rows.check(backend.kind)
                    rejected += rows.rejected[len(rejected):]
        refused = {k for k, _ in rejected}
        _release_points(conn, [k for k, _, _ in items if k not in refused], columns)
        return Outcome(written=written, unchanged=len(items) - written - len(rejected), rejected=rejected)


def _data_errors(kind: str) -> tuple[type[BaseException], ...]:
    """What a driver raises for a value it cannot hold (the fast path then checks every row)."""
    errors: tuple[type[BaseException], ...] = (OverflowError, TypeError, ValueError, sa.exc.DataError,
                                               sa.exc.ProgrammingError, sa.exc.InterfaceError, sa.exc.StatementError)
    if kind == "postgresql":
        import psycopg

        return (*errors, psycopg.DataError, psycopg.ProgrammingError)
    import sqlite3

    return (*errors, sqlite3.DataError, sqlite3.ProgrammingError, sqlite3.InterfaceError)


def _release_points(conn: sa.Connection, keys: Sequence[Key], columns: Columns) -> None:
    """Points now stored as their files are leave the quarantine (in the batch's transaction)."""
    q = schema.quarantine
    if not keys or (columns is not None and "quarantine" not in columns):
        return
    if conn.execute(sa.select(q.c.rule).limit(1)).first() is None:  # the usual case: nothing quarantined
        return
    ordered = sorted(set(keys))
    for i in range(0, len(ordered), _CHUNK):
        conn.execute(sa.delete(q).where(sa.tuple_(q.c.run_id, q.c.point_id).in_(ordered[i:i + _CHUNK])))


def _projected(name: str, rows: list[Row], columns: Columns) -> tuple[tuple[str, ...], list[Row]] | None:
    """The table's columns and rows as this store holds them (None: a store at an older revision lacks it)."""
    table = _TABLES[name]
    cols = tuple(c.name for c in table.columns)
    if columns is None:
        return cols, rows
    have = columns.get(name)
    if have is None:
        return None
    keep = [i for i, c in enumerate(cols) if c in have]
    if len(keep) == len(cols):
        return cols, rows
    return tuple(cols[i] for i in keep), [tuple(r[i] for i in keep) for r in rows]


def _delete_points(conn: sa.Connection, keys: Sequence[Key], tables: Iterable[sa.Table], columns: Columns) -> None:
    for table in tables:
        if columns is not None and table.name not in columns:
            continue
        for i in range(0, len(keys), _CHUNK):
            conn.execute(sa.delete(table).where(_keys_in(table, keys[i:i + _CHUNK])))


def _sqlite_put(conn: sa.Connection, raw: Any, rows: RowBatch, existing: dict[Key, str], columns: Columns) -> int:
    replaced = [k for k in rows.digests if k in existing]
    if replaced:
        _delete_points(conn, replaced, (*schema.POINT_TABLES, schema.imported_agg), columns)
    for name, table_rows in rows.rows.items():
        shaped = _projected(name, table_rows, columns)
        if shaped is not None and shaped[1]:
            raw.executemany(_sqlite_insert(name, shaped[0]), shaped[1])
    return len(rows.digests)


def _pg_put(conn: sa.Connection, raw: Any, rows: RowBatch, columns: Columns) -> int:
    shaped = _projected("points", rows.rows["points"], columns)
    assert shaped is not None
    cols, point_rows = shaped
    conn.execute(sa.schema.CreateTable(STAGE, if_not_exists=True))
    with raw.cursor() as cur:
        copy_rows(cur, STAGE.name, cols, point_rows)
    returned = conn.execute(_pg_upsert(cols)).all()
    written = {(r, p) for r, p, _ in returned}
    replaced = sorted((r, p) for r, p, inserted in returned if not inserted)
    if replaced:
        _delete_points(conn, replaced, (*schema.CHILD_TABLES,), columns)
    with raw.cursor() as cur:
        for name, table_rows in rows.rows.items():
            if name == "points":
                continue
            shaped = _projected(name, [r for r in table_rows if (r[0], r[1]) in written], columns)
            if shaped is not None and shaped[1]:
                copy_rows(cur, name, *shaped)
    return len(written)


# ---------------------------------------------------------------------------------------- runs, imports


def run_row(manifest: RunManifest, digest: str, origin: str = "measured") -> dict[str, Any]:
    pr = manifest.pr
    return {"run_id": manifest.run_id, "digest": digest, "infx_version": manifest.infx_version,
            "git_commit": manifest.git_commit, "catalog_hash": manifest.catalog_hash,
            "recipe_hash": manifest.recipe_hash, "engine_version": manifest.engine_version,
            "started_at": manifest.started_at, "ended_at": manifest.ended_at, "official": int(manifest.official),
            "pr_number": pr.number if pr else None, "pr_branch": pr.branch if pr else None,
            "pr_sha": pr.sha if pr else None, "pr_url": pr.url if pr else None,
            "baseline_run": manifest.baseline_run, "manifest_json": manifest.model_dump_json(),
            "origin": origin, "append_only": int(manifest.append_only)}


def upsert_run(backend: Backend, row: dict[str, Any], columns: Columns = None) -> bool:
    """Insert or replace a run row; False when it was there unchanged (nothing written)."""
    runs = schema.runs
    if columns is not None:
        row = {k: v for k, v in row.items() if k in columns.get("runs", frozenset())}
    with backend.read() as conn:
        if conn.execute(sa.select(runs.c.digest).where(runs.c.run_id == row["run_id"])).scalar() == row["digest"]:
            return False
    ins = (postgresql.insert(runs) if backend.kind == "postgresql" else sqlite_dialect.insert(runs)).values(**row)
    stmt = ins.on_conflict_do_update(index_elements=[runs.c.run_id],
                                     set_={k: ins.excluded[k] for k in row if k != "run_id"},
                                     where=runs.c.digest != ins.excluded.digest)
    with backend.write() as conn:
        conn.execute(stmt)
    return True


def replace_run(backend: Backend, run: dict[str, Any], batch: RowBatch, imported: Sequence[Row]) -> None:
    """Replace a whole run (an imported one) in one transaction: its run row, every point row, the published
    files' rows (all or nothing)."""
    with backend.write() as conn:
        for table in (*schema.POINT_TABLES, schema.imported_agg):
            conn.execute(sa.delete(table).where(table.c.run_id == run["run_id"]))
        conn.execute(sa.delete(schema.runs).where(schema.runs.c.run_id == run["run_id"]))
        conn.execute(sa.insert(schema.runs).values(**run))
        for name, rows in batch.rows.items():
            if rows:
                table = _TABLES[name]
                conn.execute(sa.insert(table), [dict(zip(table.c.keys(), r, strict=True)) for r in rows])
        if imported:
            t = schema.imported_agg
            conn.execute(sa.insert(t), [dict(zip(t.c.keys(), r, strict=True)) for r in imported])


def imported_digest(point_ids: Iterable[str]) -> str:
    return bundle_digest(json.dumps(sorted(point_ids)))


# ------------------------------------------------------------------------------------------- quarantine


def quarantine(backend: Backend, entries: Sequence[Entry]) -> None:
    """Keep refused rows (one transaction); an entry seen before gets its new reason, time and count."""
    if not entries:
        return
    q = schema.quarantine
    dialect = postgresql if backend.kind == "postgresql" else sqlite_dialect
    with backend.write() as conn:
        for e in sorted({(e.source, e.rule): e for e in entries}.values(), key=lambda e: (e.source, e.rule)):
            ins = dialect.insert(q).values(source=e.source, rule=e.rule, run_id=e.run_id, point_id=e.point_id,
                                           digest=e.digest, reason=e.reason, line=e.line, first_seen=e.first_seen,
                                           last_seen=e.last_seen, times=e.times)
            conn.execute(ins.on_conflict_do_update(
                index_elements=[q.c.source, q.c.rule],
                set_={"reason": ins.excluded.reason, "digest": ins.excluded.digest, "line": ins.excluded.line,
                      "last_seen": ins.excluded.last_seen, "times": q.c.times + 1}))


def release_runs(backend: Backend, runs: Iterable[str], columns: Columns = None) -> None:
    """Runs whose manifest now reads leave the quarantine (their ``bad-manifest`` / ``no-manifest`` entries)."""
    q = schema.quarantine
    run_ids = sorted(set(runs))
    if not run_ids or (columns is not None and "quarantine" not in columns):
        return
    mine = sa.and_(q.c.run_id.in_(run_ids), q.c.point_id.is_(None), q.c.rule.in_(("bad-manifest", "no-manifest")))
    with backend.read() as conn:  # the usual case: nothing to release, and no write lock taken for it
        if conn.execute(sa.select(q.c.rule).where(mine).limit(1)).first() is None:
            return
    with backend.write() as conn:
        conn.execute(sa.delete(q).where(mine))
