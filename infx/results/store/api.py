"""``Store``: the one interface to the results store, and the only code that speaks SQL (with the modules of
this package). The analysis, the report, the dashboard and the interop call its typed methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa

from infx.diagnostics import Diagnostic, InfxError
from infx.results.layout import MANIFEST, POINTS, ResultsDir, RunManifest
from infx.results.store import backend as backend_mod
from infx.results.store import migrate, reads, schema, snapshots, writes
from infx.results.store.backend import Backend, driver_errors, store_error
from infx.results.store.bundles import IngestReport, PointBundle, bundle_digest, in_flight, read_bundle
from infx.results.store.quarantine import Entry, Refused, entries
from infx.results.store.rows import ImportedRows
from infx.results.store.schema import SCHEMA_VERSION
from infx.results.store.url import StoreUrl, parse, sqlite_url

BATCH = 1000  # points per transaction (each batch lands whole or not at all)
DIR_BATCH = 500  # ... when ingesting a directory


def _url_of(where: str | Path | StoreUrl) -> StoreUrl:
    if isinstance(where, StoreUrl):
        return where
    if isinstance(where, Path):
        return sqlite_url(where, "--store")
    return parse(where, "--store")


class Store:
    """An open results store (SQLite file or PostgreSQL database). Use as a context manager or call
    :meth:`close`. ``readonly``: never migrated nor written (a store older than this infx is read as it is);
    ``schema_target``: migrate only up to that revision (tests of the upgrade path)."""

    def __init__(self, where: str | Path | StoreUrl, *, readonly: bool = False, schema_target: int | None = None,
                 lock_wait_s: float | None = None):
        self.url = _url_of(where)
        self.readonly = readonly
        #: (bundle, reason) of points whose rows the store cannot hold; their rows were not written.
        self.rejected: list[tuple[PointBundle, str]] = []
        self._have: reads.Have = None
        path = self.url.path
        if path is not None:
            if path.exists() and not path.is_file():
                raise InfxError(Diagnostic(f"results store {path} is not a file (a directory is in its place)",
                                           str(path)))
            if readonly and not path.is_file():
                raise InfxError(Diagnostic(f"no results database at {path} (run `infx ingest` first)"))
            if not readonly:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise store_error(self.url, exc) from None
        self._db: Backend | None = None
        try:
            wait = backend_mod.LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
            self._db = Backend(self.url, readonly=readonly, lock_wait_s=wait)
            if not readonly:
                migrate.upgrade(self._db, schema_target)
            self._check_tables(schema_target)
        except driver_errors(self.url.kind) as exc:
            self.close()
            raise store_error(self.url, exc) from None
        except BaseException:
            self.close()
            raise

    @staticmethod
    def peek_version(where: str | Path | StoreUrl) -> int | None:
        """The version of a store without opening it for use (None: no database there yet, or an empty one)."""
        url = _url_of(where)
        if url.path is not None and not url.path.is_file():
            return None
        try:
            db = Backend(url, readonly=True)
        except driver_errors(url.kind) as exc:
            raise store_error(url, exc) from None
        try:
            with _guard_url(url, db.read()) as conn:
                seen = migrate.current(conn)
        finally:
            db.close()
        if not seen.known:
            raise migrate.newer_error(url.display, seen)
        return seen.number or None

    # basics ------------------------------------------------------------------------------------------
    @property
    def db(self) -> Backend:
        if self._db is None:
            raise InfxError(Diagnostic(f"results store {self.url.display} is closed"))
        return self._db

    @property
    def path(self) -> Path | str:
        """The SQLite file, or the store's display name (password masked)."""
        return self.url.path if self.url.path is not None else self.url.display

    @property
    def name(self) -> str:
        return self.url.display

    @property
    def kind(self) -> str:
        return self.url.kind

    @property
    def conn(self) -> Any:
        """The DB-API connection underneath, for tests only (raw SQL belongs in this package)."""
        return self.db.raw

    def set_query_only(self) -> None:
        """Refuse writes on this store from now on (a read-only view that can still read a newer WAL)."""
        with _guard(self):
            self.db.set_query_only()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()

    def _read(self) -> Any:
        return _guard(self, self.db.read())

    def _tables(self) -> dict[str, frozenset[str]]:
        """Every table of the database with its columns."""
        with self._read() as conn:
            insp = sa.inspect(conn)
            return {name: frozenset(c["name"] for c in insp.get_columns(name)) for name in insp.get_table_names()}

    def _check_tables(self, schema_target: int | None) -> None:
        """A store at this infx's schema must have every table and column it defines: one that lost a table or
        column (edited by hand, or half-restored) is refused, never half-used."""
        with self._read() as conn:
            seen = migrate.current(conn)
        if not seen.known:
            raise migrate.newer_error(self.name, seen)
        if seen.number == 0 and self.readonly:
            raise InfxError(Diagnostic(f"results store {self.name} is not an infx results database "
                                       "(no schema version)", self.name))
        if seen.number < SCHEMA_VERSION or schema_target is not None:
            self._have = self._tables()  # held at an older revision: reads and writes use what it has
            return
        have = self._tables()
        for table in schema.metadata.sorted_tables:
            if table.name not in have:
                raise InfxError(Diagnostic(f"results store {self.name} is damaged: table '{table.name}' is missing "
                                           "(delete the file and run `infx ingest` again)", self.name))
            missing = sorted({c.name for c in table.columns} - have[table.name])
            if missing:
                raise InfxError(Diagnostic(f"results store {self.name} is damaged: table '{table.name}' has no "
                                           f"column '{missing[0]}' (delete the file and run `infx ingest` again)",
                                           self.name))

    # schema ------------------------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self._read() as conn:
            return migrate.current(conn).number

    def migrate(self, target: int | None = None) -> int:
        """Apply the pending revisions (up to ``target``); returns the version the store is at."""
        with _guard(self):
            version = migrate.upgrade(self.db, target)
        self._check_tables(target)
        return version

    # writes ------------------------------------------------------------------------------------------
    def upsert_run(self, manifest: RunManifest, digest: str | None = None) -> bool:
        """Insert or replace a run row; False when it was already there unchanged."""
        digest = digest or bundle_digest(manifest.model_dump_json())
        with _guard(self):
            return writes.upsert_run(self.db, writes.run_row(manifest, digest), self._have)

    def add_points(self, bundles: Iterable[PointBundle], *, batch: int = BATCH) -> tuple[int, int]:
        """Write validated bundles; returns (written, unchanged). Unchanged points (same digest) are not
        touched. Up to ``batch`` points share one transaction: a point is never half-written. Points whose rows
        the store cannot hold are left out and listed in :attr:`rejected`."""
        written = unchanged = 0
        pending: list[PointBundle] = []

        def flush() -> None:
            nonlocal written, unchanged, pending
            with _guard(self):
                out = writes.write_bundles(self.db, pending, self._have)
            written, unchanged = written + out.written, unchanged + out.unchanged
            if out.rejected:
                by_key = {(b.run_id, b.point.point_id): b for b in pending}
                self.rejected.extend((by_key[k], reason) for k, reason in out.rejected)
            pending = []

        for b in bundles:
            pending.append(b)
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        return written, unchanged

    def check_imported(self, points: Sequence[ImportedRows]) -> list[tuple[ImportedRows, str]]:
        """The imported points whose rows the store cannot hold, with the reason (nothing written)."""
        bad = []
        for ip in points:
            try:
                writes.coerce_row(schema.points, ip.point, self.kind)
                writes.coerce_row(schema.results, ip.result, self.kind)
                writes.coerce_row(schema.imported_agg, ip.agg, self.kind)
            except ValueError as exc:
                bad.append((ip, str(exc)))
        return bad

    def replace_imported_run(self, manifest: RunManifest, points: Sequence[ImportedRows]) -> None:
        """Replace an imported run's rows in one transaction (all or nothing)."""
        run = writes.run_row(manifest, writes.imported_digest(ip.point.point_id for ip in points), "imported")
        batch = writes.RowBatch()
        batch.rows["points"] = [writes.coerce_row(schema.points, _scoped(ip.point), self.kind) for ip in points]
        batch.rows["results"] = [writes.coerce_row(schema.results, ip.result, self.kind) for ip in points]
        aggs = [writes.coerce_row(schema.imported_agg, ip.agg._replace(seq=k), self.kind)
                for k, ip in enumerate(points)]
        with _guard(self):
            writes.replace_run(self.db, run, batch, aggs)

    def quarantine(self, entries: Sequence[Entry]) -> None:
        """Keep rows ingest refused, with their rule and reason."""
        if self._have is not None and "quarantine" not in self._have:
            return
        with _guard(self):
            writes.quarantine(self.db, entries)

    def release_runs(self, run_ids: Iterable[str]) -> None:
        with _guard(self):
            writes.release_runs(self.db, run_ids, self._have)

    # ingest from files -------------------------------------------------------------------------------
    def ingest_run(self, results: ResultsDir, run_id: str) -> IngestReport:
        """Ingest one run directory: every point validated before its rows are written, batches written
        idempotently, every refusal reported and kept in the quarantine with its rule."""
        report = IngestReport()
        refused: list[Entry] = []
        run_dir = results.run_dir(run_id)
        try:
            manifest = results.read_manifest(run_id)
        except InfxError as exc:
            report.problems.extend(exc.diagnostics)
            report.skipped += len(results.points(run_id))
            self.quarantine(entries("bad-manifest", exc.diagnostics, source=str(run_dir / MANIFEST), run_id=run_id))
            return report
        report.runs = 1
        self.upsert_run(manifest, bundle_digest((run_dir / MANIFEST).read_bytes()))
        self.release_runs([run_id])

        def bundles() -> Iterator[PointBundle]:
            for point_id in results.points(run_id):
                if in_flight(results, run_id, point_id):
                    report.pending += 1
                    continue
                try:
                    yield read_bundle(results, run_id, point_id)
                except Refused as exc:
                    report.skipped += 1
                    report.problems.extend(exc.diagnostics)
                    refused.extend(entries(exc.rule, exc.diagnostics, run_id=run_id, point_id=point_id,
                                           source=str(results.point_dir(run_id, point_id))))

        written, unchanged = self.add_points(bundles(), batch=DIR_BATCH)
        report.ingested += written
        report.unchanged += unchanged
        for b, problem in self.rejected:
            report.skipped += 1
            where = str(results.point_dir(b.run_id, b.point.point_id))
            diag = Diagnostic(f"not ingested: {problem}", where)
            report.problems.append(diag)
            refused.extend(entries("unstorable", [diag], source=where, run_id=b.run_id, point_id=b.point.point_id))
        self.rejected.clear()
        self.quarantine(refused)
        return report


    def ingest_dir(self, root: str | Path, run_ids: list[str] | None = None) -> IngestReport:
        """Ingest a results directory (every run, or ``run_ids``)."""
        results = ResultsDir(root)
        report = IngestReport()
        for run_id in run_ids if run_ids is not None else results.runs():
            report.merge(self.ingest_run(results, run_id))
        if run_ids is None and results.root.is_dir():  # a run directory that lost its manifest: say so
            refused: list[Entry] = []
            for d in sorted(results.root.iterdir()):
                if d.is_dir() and (d / POINTS).is_dir() and not (d / MANIFEST).is_file():
                    n = sum(1 for p in (d / POINTS).iterdir() if p.is_dir())
                    report.skipped += n
                    diag = Diagnostic(f"run directory without {MANIFEST}: its {n} point(s) not ingested",
                                      str(d / MANIFEST))
                    report.problems.append(diag)
                    refused.extend(entries("no-manifest", [diag], source=str(d / MANIFEST), run_id=d.name))
            self.quarantine(refused)
        return report

    # reads -------------------------------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        with self._read() as conn:
            return reads.run_ids(conn)

    def measured_run_ids(self) -> list[str]:
        """Runs infx measured (imported runs are never the default)."""
        with self._read() as conn:
            return reads.run_ids(conn, "measured")

    def origin(self, run_id: str) -> str | None:
        """``measured`` (a run infx measured) or ``imported`` (external results, infx.interop); None: no such run."""
        with self._read() as conn:
            return reads.origin(conn, run_id)

    def run_digest(self, run_id: str) -> str | None:
        """The digest of the run's manifest as stored (None: no such run)."""
        with self._read() as conn:
            return reads.run_digest(conn, run_id)

    def manifest(self, run_id: str) -> RunManifest | None:
        with self._read() as conn:
            return reads.manifest(conn, run_id)

    def counts(self) -> dict[str, int]:
        with self._read() as conn:
            return reads.counts(conn, ("runs", "points", "results", "startup", "failures"))

    def table_counts(self) -> dict[str, int]:
        """Rows per table of the store (every table this store has)."""
        names = [t.name for t in schema.metadata.sorted_tables
                 if self._have is None or t.name in self._have]
        with self._read() as conn:
            return reads.counts(conn, names)

    def runs_overview(self) -> list[reads.RunOverview]:
        with self._read() as conn:
            return reads.runs_overview(conn)

    def outcome_counts(self) -> list[reads.OutcomeCount]:
        with self._read() as conn:
            return reads.outcome_counts(conn)

    def measured(self, run_ids: Sequence[str] | None = None) -> list[reads.MeasuredRow]:
        with self._read() as conn:
            return reads.measured(conn, run_ids, self._have)

    def acceptance(self, run_ids: Sequence[str] | None = None) -> list[reads.AcceptanceRow]:
        """Speculative-decoding acceptance per point and role (measured or synthetic, and the figures)."""
        with self._read() as conn:
            return reads.acceptance(conn, run_ids, self._have)

    def point_lines(self, run_id: str) -> list[reads.PointLineRow]:
        with self._read() as conn:
            return reads.point_lines(conn, run_id)

    def evals(self, run_ids: Sequence[str] | None = None) -> list[reads.EvalRow]:
        with self._read() as conn:
            return reads.evals(conn, run_ids, self._have)

    def answers(self, run_id: str, point_id: str, column: str = "strict") -> dict[int, bool]:
        if column not in ("strict", "flexible"):
            raise ValueError(column)
        with self._read() as conn:
            return reads.answers(conn, run_id, point_id, column)

    def power(self, run_ids: Sequence[str] | None = None) -> list[reads.PowerRow]:
        with self._read() as conn:
            return reads.power(conn, run_ids, self._have)

    def telemetry_figures(self, run_id: str) -> dict[str, dict[str, Any]]:
        with self._read() as conn:
            return reads.telemetry_figures(conn, run_id, self._have)

    def imported_aggs(self, run_id: str) -> list[tuple[str, str, str]]:
        with self._read() as conn:
            return reads.imported_aggs(conn, run_id)

    def quarantined(self) -> list[Entry]:
        with self._read() as conn:
            return reads.quarantined(conn, self._have)

    # snapshots ---------------------------------------------------------------------------------------
    def run_facts(self) -> dict[str, snapshots.RunFacts]:
        with self._read() as conn:
            return reads.run_facts(conn, self._have)

    def as_of(self, text: str | None) -> snapshots.AsOf:
        """``--as-of DATE|RUN`` resolved against this store (None: latest)."""
        return snapshots.resolve_as_of(text, self.run_facts())

    def view(self, as_of: snapshots.AsOf = snapshots.LATEST) -> snapshots.View:
        """Every curve scope's snapshot at ``as_of`` and the points that draw them."""
        if self._have is not None and "scope" not in self._have.get("points", frozenset()):
            return snapshots.View(as_of, [])  # a store from before snapshots (opened read-only)
        with self._read() as conn:
            facts = reads.run_facts(conn, self._have)
            chosen = snapshots.choose(reads.scope_runs(conn), facts, as_of)
            view = snapshots.View(as_of, chosen)
            view.points = snapshots.view_points(chosen, reads.scope_points(conn, view.runs)) if chosen else []
        return view

    # copy --------------------------------------------------------------------------------------------
    def run_rows(self, run_id: str) -> tuple[dict[str, Any], writes.RowBatch, list[tuple[Any, ...]]]:
        """A run as rows (its run row, every point table's rows, its published files' rows), for copying."""
        have = self._have
        with self._read() as conn:
            runs = schema.runs
            have_runs = [c for c in runs.columns if have is None or c.name in have["runs"]]
            row = conn.execute(sa.select(*have_runs).where(runs.c.run_id == run_id)).one()
            run = dict(zip(runs.c.keys(), _full(runs, [c.name for c in have_runs], tuple(row)), strict=True))
            batch = writes.RowBatch()
            for table in schema.POINT_TABLES:
                if have is not None and table.name not in have:
                    continue
                cols = [c.name for c in table.columns if have is None or c.name in have[table.name]]
                got = reads.table_rows(conn, table, run_id, cols)
                batch.rows[table.name] = [_full(table, cols, r) for r in got]
            aggs: list[tuple[Any, ...]] = []
            if have is None or "imported_agg" in have:
                t = schema.imported_agg
                cols = [c.name for c in t.columns if have is None or c.name in have["imported_agg"]]
                aggs = [_full(t, cols, r) for r in reads.table_rows(conn, t, run_id, cols)]
        batch.rows["points"] = [_scoped_tuple(r) for r in batch.rows["points"]]
        batch.digests = {(r[0], r[1]): r[2] for r in batch.rows["points"]}
        return run, batch, aggs

    def write_rows(self, batch: writes.RowBatch) -> writes.Outcome:
        with _guard(self):
            return writes.write_rows(self.db, batch, self._have)

    def replace_run_rows(self, run: dict[str, Any], batch: writes.RowBatch, aggs: Sequence[tuple[Any, ...]]) -> None:
        with _guard(self):
            writes.replace_run(self.db, run, batch, aggs)

    def upsert_run_row(self, run: dict[str, Any]) -> bool:
        with _guard(self):
            return writes.upsert_run(self.db, run, self._have)


def _full(table: sa.Table, cols: Sequence[str], row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row of ``table`` in its full column order (columns the source store lacks: their server default)."""
    got = dict(zip(cols, row, strict=True))
    out = []
    for c in table.columns:
        if c.name in got:
            out.append(got[c.name])
        else:
            default = _default_of(c)
            out.append(None if default is None else int(default) if default.isdigit() else default.strip("'"))
    return tuple(out)


def _default_of(col: sa.Column[Any]) -> str | None:
    """The SQL text of a column's server default (``'measured'``, ``0``), None without one."""
    d = col.server_default
    if not isinstance(d, sa.DefaultClause):
        return None
    arg = d.arg
    return arg if isinstance(arg, str) else str(getattr(arg, "text", arg))


def _scoped(row: Any) -> Any:
    """A points row with its recipe fingerprint and scope filled in when it has none (imports, older stores)."""
    return type(row)(*_scoped_tuple(tuple(row)))


def _scoped_tuple(row: tuple[Any, ...]) -> tuple[Any, ...]:
    import json

    cols = schema.points.c.keys()
    values = dict(zip(cols, row, strict=True))
    if values.get("scope"):
        return row
    try:
        recipe = snapshots.recipe_fingerprint(json.loads(values["point_json"])["point"])
    except (ValueError, KeyError, TypeError):
        return row
    values["recipe_fingerprint"] = recipe
    values["scope"] = snapshots.scope_key(values["model"], values["hardware"], values["framework"],
                                          values["precision"], values["scenario"], values["isl"], values["osl"],
                                          values["spec_decoding"], int(values["disagg"] or 0), recipe)
    return tuple(values[c] for c in cols)


class _guard_url:
    """Driver errors on a store as one line naming it (a context manager; wraps another one if given)."""

    def __init__(self, url: StoreUrl, inner: Any = None) -> None:
        self.url, self.inner = url, inner
        self.errors = driver_errors(url.kind)

    def __enter__(self) -> Any:
        try:
            return self.inner.__enter__() if self.inner is not None else None
        except self.errors as exc:
            raise store_error(self.url, exc) from None

    def __exit__(self, tp: Any, exc: Any, tb: Any) -> Literal[False]:
        if self.inner is not None:
            try:
                self.inner.__exit__(tp, exc, tb)
            except self.errors as err:
                raise store_error(self.url, err) from None
        if exc is not None and isinstance(exc, self.errors):
            raise store_error(self.url, exc) from None
        return False


def _guard(store: Store, inner: Any = None) -> _guard_url:
    return _guard_url(store.url, inner)

