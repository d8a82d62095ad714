"""A store written by infx before Alembic (``tests/fixtures/store/schema7.db``: hand-written migrations,
``schema_version`` 7) is upgraded in place and gives the figures it gave then (``schema7.json``), and
``infx store copy`` takes it into a team store unchanged."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from infx.analysis.compare import compare_arms, compare_runs
from infx.analysis.dataset import frontier_membership, load_measured
from infx.analysis.evals import load_evals
from infx.interop.ingest import imported_aggs
from infx.results.store import SCHEMA_VERSION, Store
from infx.results.store.copy import copy_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store"


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    db = tmp_path / "infx.db"
    shutil.copyfile(FIXTURES / "schema7.db", db)
    return db


def figures(st: Store) -> dict[str, object]:
    """What make_schema7_db.py recorded, read through today's store."""
    out: dict[str, object] = {"schema_version": 7}
    counts = st.table_counts()
    out["counts"] = {t: counts[t] for t in ("runs", "points", "results", "startup", "failures", "telemetry", "evals",
                                             "eval_answers", "trials", "imported_agg")}
    out["runs"] = st.run_ids()
    out["measured_runs"] = st.measured_run_ids()
    out["origins"] = {r: st.origin(r) for r in st.run_ids()}
    measured = load_measured(st, gpus_per_node=lambda run, runner: 8)

    def ci(m):  # type: ignore[no-untyped-def]
        e = m.estimate("output_tok_per_s")
        return None if e is None else [e.lo, e.hi]

    out["measured"] = {f"{m.run_id}/{m.point_id}": {
        "output_tok_per_s": m.output_tok_per_s, "total_tok_per_s": m.total_tok_per_s,
        "interactivity_median": m.interactivity_median, "ttft_p99": m.ttft_p99,
        "joules_per_output_token": m.joules_per_output_token, "trials": m.trials,
        "kv_cache_tokens": m.kv_cache_tokens, "topology": m.arm.topology, "ci_output": ci(m)} for m in measured}
    mask = frontier_membership(measured, norm="gpu")
    out["frontier_gpu"] = sorted(f"{m.run_id}/{m.point_id}" for m, on in zip(measured, mask, strict=True) if on)
    out["compare_arms_verdict"] = [c.verdict for c in compare_arms(measured, "pr-1234", "tp=2", "tp=4",
                                                                   norm="node").comparisons]
    out["compare_runs_verdict"] = [c.verdict for c in compare_runs(measured, "pr-1234", "baseline",
                                                                   norm="gpu").comparisons]
    out["evals"] = sorted([e.point_id, e.state, e.score_strict, e.n] for e in load_evals(st))
    out["imported"] = [[pid, name] for pid, name, _ in imported_aggs(st, "published")]
    out["failures"] = sorted([pl_run, ln.point_id, ln.state, ln.failure_class] for pl_run in st.run_ids()
                             for ln in st.point_lines(pl_run) if ln.state != "done")
    return out


def test_the_kept_store_upgrades_in_place_and_gives_the_same_figures(old_store: Path) -> None:
    want = json.loads((FIXTURES / "schema7.json").read_text())
    with sqlite3.connect(old_store) as conn:  # as written: no Alembic yet
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (7,)
        assert "alembic_version" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert Store.peek_version(old_store) == 7
    with Store(old_store) as st:
        assert st.schema_version() == SCHEMA_VERSION
        got = figures(st)
        view = st.view()
    assert got == want
    # the upgrade gave the points their curve scopes: the latest view reads them
    assert view.snapshots and {r for s in view.snapshots for r in s.runs} == {"pr-1234"}
    with sqlite3.connect(old_store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM points WHERE scope IS NULL").fetchone() == (0,)
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (f"{SCHEMA_VERSION:04d}",)


def test_the_kept_store_copies_into_a_team_store_unchanged(old_store: Path, store_url: str) -> None:
    want = json.loads((FIXTURES / "schema7.json").read_text())
    with Store(old_store, readonly=True) as src, Store(store_url) as dst:
        report = copy_store(src, dst)
        assert report.runs == 3 and copy_store(src, dst).written == 0
        got = figures(dst)
    assert got == want


def test_a_readonly_open_reads_the_old_store_without_upgrading_it(old_store: Path) -> None:
    with Store(old_store, readonly=True) as st:
        assert st.schema_version() == 7
        assert len(st.measured()) == 23 and st.view().snapshots == []
    with sqlite3.connect(old_store) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (7,)
