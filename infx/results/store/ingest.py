"""Ingest one finished point (as ``infx run`` goes) into the workspace's store, and find the results a
command names. A whole directory is :meth:`infx.results.store.api.Store.ingest_dir`."""

from __future__ import annotations

from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError
from infx.results.layout import MANIFEST, POINTS, ResultsDir
from infx.results.store import url as store_url
from infx.results.store.api import Store
from infx.results.store.bundles import IngestReport, bundle_digest, in_flight, read_bundle
from infx.results.store.quarantine import Refused, entries


def ingest_point(results_root: str | Path, run_id: str, point_id: str, *, store: Store | None = None) -> IngestReport:
    """Ingest one finished point directory (what ``infx run`` calls after each point) into the store the
    workspace names (``INFX_STORE_URL``, ``infx.toml`` ``[store] url``, else ``RESULTS/infx.db``). Also records
    the run's manifest the first time. Bad files are reported and quarantined, never half-ingested."""
    results = ResultsDir(results_root)
    own = store is None
    st = store or Store(store_url.resolve(None, results.root))
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
        if in_flight(results, run_id, point_id):  # interrupted mid-point: measured again, never stored
            report.pending += 1
            return report
        try:
            bundle = read_bundle(results, run_id, point_id)
        except Refused as exc:
            report.problems.extend(exc.diagnostics)
            report.skipped += 1
            st.quarantine(entries(exc.rule, exc.diagnostics, source=str(results.point_dir(run_id, point_id)),
                                  run_id=run_id, point_id=point_id))
            return report
        written, unchanged = st.add_points([bundle])
        report.ingested, report.unchanged = written, unchanged
        for b, problem in st.rejected:
            where = str(results.point_dir(b.run_id, b.point.point_id))
            diag = Diagnostic(f"not ingested: {problem}", where)
            report.skipped += 1
            report.problems.append(diag)
            st.quarantine(entries("unstorable", [diag], source=where, run_id=b.run_id, point_id=b.point.point_id))
        st.rejected.clear()
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


def require_results(root: str | Path, run_ids: list[str] | None = None, store: store_url.StoreUrl | None = None
                    ) -> None:
    """For the read-only commands (``infx report``/``compare``): refuse, before any database is created, a
    directory that holds neither a run nor ``infx.db`` (a team store is never refused here: it holds runs that
    are not in this directory)."""
    results = ResultsDir(root)
    if store is not None and store.kind != "sqlite":
        return
    db = store.path if store is not None and store.path is not None else results.db_path
    if run_ids or db.is_file() or results.runs():
        return
    raise InfxError(Diagnostic(f"{results.root}: no runs (no RUN/{MANIFEST} and no {db.name})"))
