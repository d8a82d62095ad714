from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.results.layout import PointStatus, ResultsDir
from infx.results.store import (
    SCHEMA_VERSION,
    Store,
    ingest_point,
    make_bundle,
)
from infx.results.store.migrate import head_revision
from infx.results.synthetic import SEED_ARMS, make_point, make_result


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_ingest_is_idempotent(seed_results: ResultsDir) -> None:
    with Store(seed_results.db_path) as st:
        first = st.ingest_dir(seed_results.root)
        assert (first.ingested, first.skipped, first.problems) == (24, 0, [])
        assert st.counts() == {"runs": 2, "points": 24, "results": 22, "startup": 22, "failures": 2}
    before = dump(seed_results.db_path)
    with Store(seed_results.db_path) as st:
        again = st.ingest_dir(seed_results.root)
    assert (again.ingested, again.unchanged) == (0, 24)
    assert dump(seed_results.db_path) == before


def test_changed_point_is_replaced_not_duplicated(seed_results: ResultsDir) -> None:
    with Store(seed_results.db_path) as st:
        st.ingest_dir(seed_results.root)
    pid = "dsv41flash_tp2_conc8_kvnone_spec-mtp"
    result = seed_results.read_result("pr-1234", pid)
    faster = result.model_copy(update={"metrics": result.metrics.model_copy(
        update={"interactivity_median": 999.0})})
    seed_results.write_result("pr-1234", pid, faster)
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
        assert (rep.ingested, rep.unchanged) == (1, 23)
        rows = st.conn.execute("SELECT interactivity_median FROM results WHERE point_id=? AND run_id='pr-1234'",
                               (pid,)).fetchall()
        assert rows == [(999.0,)]
        assert st.counts()["results"] == 22


def test_corrupt_result_is_reported_and_skipped_whole(seed_results: ResultsDir) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    path = seed_results.file("pr-1234", pid, "result.json")
    path.write_text(path.read_text()[:300])  # truncated mid-write by a crash
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
        assert (rep.ingested, rep.skipped) == (23, 1)
        assert len(rep.problems) == 1 and rep.problems[0].file == str(path)
        assert "invalid JSON" in rep.problems[0].message and rep.problems[0].line is not None
        for table in ("points", "results", "startup", "failures"):
            n = st.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE point_id=? AND run_id='pr-1234'",
                                (pid,)).fetchone()[0]
            assert n == 0, table


def test_partial_result_is_skipped(seed_results: ResultsDir) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    result = seed_results.read_result("pr-1234", pid)
    seed_results.write_result("pr-1234", pid, result.model_copy(update={"complete": False}))
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
        assert rep.skipped == 1 and "partial" in rep.problems[0].message
        assert st.conn.execute("SELECT COUNT(*) FROM points WHERE point_id=? AND run_id='pr-1234'",
                               (pid,)).fetchone()[0] == 0


def test_done_point_without_result_is_skipped(seed_results: ResultsDir) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    seed_results.file("pr-1234", pid, "result.json").unlink()
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
    assert rep.skipped == 1 and "missing result.json" in rep.problems[0].message


def test_point_without_status_is_in_progress(seed_results: ResultsDir) -> None:
    pid = "dsv41flash_tp4_conc16_kvnone_spec-mtp"
    seed_results.file("pr-1234", pid, "status.json").unlink()
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
    assert (rep.pending, rep.skipped, rep.ingested) == (1, 0, 23)


def test_failures_and_startup_facts_are_stored(seed_results: ResultsDir) -> None:
    with Store(seed_results.db_path) as st:
        st.ingest_dir(seed_results.root)
        rows = st.conn.execute("SELECT point_id, state, failure_class, log_tail FROM failures "
                               "ORDER BY point_id").fetchall()
        assert [(r[0], r[1], r[2]) for r in rows] == [
            ("dsv41flash_tp2_conc256_kvnone_spec-mtp", "failed", "startup-oom"),
            ("dsv41flash_tp4_conc256_kvnone_spec-mtp", "skipped", "infeasible")]
        assert "HIP out of memory" in rows[0][3]
        kv = st.conn.execute("SELECT kv_cache_tokens FROM startup WHERE point_id LIKE 'dsv41flash_tp2_%' "
                             "AND run_id='pr-1234' LIMIT 1").fetchone()[0]
        assert kv == 800_000
        ident = st.conn.execute("SELECT model, hardware, framework, precision, topology, conc, scenario, image "
                                "FROM points WHERE point_id='dsv41flash_tp2_conc8_kvnone_spec-mtp' "
                                "AND run_id='pr-1234'").fetchone()
        assert ident[:7] == ("deepseek-ai/DeepSeek-V4.1-Flash", "mi355x", "vllm", "fp4", "TP=2", 8, "agentic-coding")


def test_ingest_point_as_a_run_goes(tmp_path: Path) -> None:
    from infx.results.synthetic import make_manifest

    rd = ResultsDir(tmp_path)
    rd.write_manifest(make_manifest("live"))
    point = make_point(4, 2)
    rd.write_point("live", point)
    rd.write_result("live", point.point_id, make_result(point, SEED_ARMS[1]))
    rd.write_status("live", point.point_id, PointStatus(state="done"))
    rep = ingest_point(tmp_path, "live", point.point_id)
    assert (rep.ingested, rep.problems) == (1, [])
    assert ingest_point(tmp_path, "live", point.point_id).unchanged == 1
    with Store(rd.db_path) as st:
        assert st.counts()["results"] == 1 and st.run_ids() == ["live"]


def test_in_memory_bundles_are_idempotent_too(tmp_path: Path) -> None:
    from infx.results.synthetic import make_manifest

    point = make_point(2, 4)
    bundle = make_bundle("m", point, PointStatus(state="done"), make_result(point, SEED_ARMS[0]))
    with Store(tmp_path / "x.db") as st:
        st.upsert_run(make_manifest("m"))
        assert st.add_points([bundle]) == (1, 0)
        assert st.add_points([bundle]) == (0, 1)


def test_migrations_apply_in_order_from_an_old_database(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    st = Store(db, schema_target=1)
    assert st.schema_version() == 1
    assert st.conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name='points_identity'"
                           ).fetchone()[0] == 0
    st.close()
    with Store(db, schema_target=8) as st8:  # 0002 made the identity index ...
        assert st8.conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name='points_identity'").fetchone()[0] == 1
    with Store(db) as st2:  # ... and 0009 dropped it again; the (run, state) index stays
        assert st2.schema_version() == SCHEMA_VERSION == int(head_revision())
        indexes = {r[0] for r in st2.conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND "
                                                   "tbl_name='points' AND sql IS NOT NULL")}
        assert indexes == {"points_state"}
        assert st2.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_database_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "n.db") as st:
        st.conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 1,))
    with pytest.raises(InfxError, match="newer"):
        Store(tmp_path / "n.db")


def test_bad_manifest_skips_the_run(seed_results: ResultsDir) -> None:
    seed_results.manifest_path("baseline").write_text("{}")
    with Store(seed_results.db_path) as st:
        rep = st.ingest_dir(seed_results.root)
        assert rep.skipped == 6 and st.run_ids() == ["pr-1234"]
        assert any("run_id" in str(d) for d in rep.problems)


def test_concurrent_writers_share_the_database(seed_results: ResultsDir) -> None:
    """`infx run` ingesting point by point while `infx ingest` runs: both finish, nothing lost."""
    import threading
    import traceback

    errors: list[BaseException] = []

    def ingest_all() -> None:
        try:
            with Store(seed_results.db_path) as st:
                st.ingest_dir(seed_results.root)
        except BaseException as exc:
            errors.append(exc)

    def ingest_each() -> None:
        try:
            for pid in seed_results.points("pr-1234"):
                ingest_point(seed_results.root, "pr-1234", pid)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (ingest_all, ingest_each, ingest_all)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [], "".join(traceback.format_exception(errors[0]))
    with Store(seed_results.db_path) as st:
        assert st.counts() == {"runs": 2, "points": 24, "results": 22, "startup": 22, "failures": 2}


def test_writers_opening_a_fresh_database_together_all_succeed(tmp_path: Path) -> None:
    """Two connections switching a fresh database to WAL deadlock, and SQLite answers one of
    them SQLITE_BUSY without waiting; the store retries the switch. (The old code failed about
    one trial in six here.)"""
    import threading
    import traceback

    errors: list[BaseException] = []
    for trial in range(30):
        path = tmp_path / f"fresh{trial}.db"
        start = threading.Barrier(4)

        def open_store(path: Path = path, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                with Store(path) as st:
                    assert st.schema_version() == SCHEMA_VERSION
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_store) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert errors == [], "".join(traceback.format_exception(errors[0]))
    with Store(tmp_path / "fresh0.db") as st:
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_locked_past_the_wait_is_a_clear_error(tmp_path: Path) -> None:
    from infx.results.store.sqlite_open import open_for_writing

    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InfxError, match=r"held\.db: database is locked"):
            open_for_writing(path, lock_wait_s=0.3)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    open_for_writing(path, lock_wait_s=0.3).close()  # free again: it opens


def test_a_point_another_writer_commits_meanwhile_is_replaced_whole(tmp_path: Path) -> None:
    """Writer A decides what to replace; writer B commits the same point as failed just before A's
    transaction. A's result must replace B's rows whole: no failure row left beside the result."""
    from infx.results.synthetic import make_manifest

    point = make_point(2, 4)
    done = make_bundle("m", point, PointStatus(state="done"), make_result(point, SEED_ARMS[0]))
    failed = make_bundle("m", point, PointStatus(state="failed", reason="engine died", failure_class="engine-died"),
                         None)
    db = tmp_path / "x.db"

    class Racing(Store):
        def transaction(self):  # type: ignore[no-untyped-def]
            with Store(db) as other:  # B commits just before A takes the write lock
                other.add_points([failed])
            return super().transaction()

    with Store(db) as st:
        st.upsert_run(make_manifest("m"))
    with Racing(db) as a:
        assert a.add_points([done]) == (1, 0)
    with Store(db) as st:
        assert st.conn.execute("SELECT state FROM points").fetchall() == [("done",)]
        assert (st.counts()["results"], st.counts()["failures"]) == (1, 0)


def test_migration_7_keeps_every_trial_and_the_intervals(tmp_path: Path) -> None:
    """A store at schema 6 (before issue 21) upgrades; a point measured with 3 trials then has its
    trial rows and interval columns, and one without trials reads as 1 trial with no interval."""
    from infx.analysis.dataset import load_measured
    from infx.metrics.result import Trial
    from infx.metrics.uncertainty import across_trials
    from infx.results.synthetic import make_manifest

    db = tmp_path / "x.db"
    point, plain = make_point(2, 4, isl=1024, osl=1024), make_point(2, 8, isl=1024, osl=1024)
    with Store(db, schema_target=6) as st:
        st.upsert_run(make_manifest("m"))
        st.add_points([make_bundle("m", plain, PointStatus(state="done"), make_result(plain, SEED_ARMS[0]))])
        assert "trials" not in {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    base = make_result(point, SEED_ARMS[0])
    t = base.metrics.throughput.output_tok_per_s
    trials = [Trial(trial=k, started_at=0.0, ended_at=1.0, warmup=k == 0, window_ns=(0, 1),
                    metrics=base.metrics.model_copy(update={"throughput": base.metrics.throughput.model_copy(
                        update={"output_tok_per_s": t * f})})) for k, f in enumerate((0.98, 1.0, 1.02))]
    est = across_trials([tr.metrics.throughput.output_tok_per_s for tr in trials])
    assert est is not None
    result = base.model_copy(update={"trials": trials, "stats": {"output_tok_per_s": est}})
    with Store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION
        st.add_points([make_bundle("m", point, PointStatus(state="done"), result)])
        rows = st.conn.execute("SELECT trial, warmup, output_tok_per_s FROM trials ORDER BY trial").fetchall()
        assert [(r[0], r[1]) for r in rows] == [(0, 1), (1, 0), (2, 0)]
        assert rows[2][2] == pytest.approx(t * 1.02)
        got = {m.point_id: m for m in load_measured(st, gpus_per_node=lambda r, n: 8)}
    e = got[point.point_id].estimate("output_tok_per_s")
    assert got[point.point_id].trials == 3 and e is not None and e.method == "trials"
    assert e.lo == pytest.approx(est.lo, rel=1e-3) and e.hi == pytest.approx(est.hi, rel=1e-3) and e.df == 2
    assert got[plain.point_id].trials == 1 and got[plain.point_id].estimate("output_tok_per_s") is None


def test_packed_intervals_round_trip_and_name_their_method() -> None:
    """results.ci: bounds relative to the mean (single floats), the method and df of the packed
    estimates (not of some other figure's), NaN for a figure without an interval."""
    from infx.metrics.uncertainty import Estimate
    from infx.results.store import pack_ci, unpack_ci

    base = make_result(make_point(2, 4, isl=1024, osl=1024), SEED_ARMS[0])
    assert pack_ci(base) is None  # results from before issue 21: no interval
    stats = {"ttft_p99": Estimate(mean=10.0, lo=9.0, hi=11.0, n=3, method="trials", se=0.4, df=2.0),
             "interactivity_p90": Estimate(mean=50.0, lo=45.0, hi=60.0, n=1, method="within-run", se=3.0),
             "total_tok_per_s": Estimate(mean=0.0, lo=0.0, hi=0.0, n=1, method="within-run")}
    method, df, bounds = unpack_ci(pack_ci(base.model_copy(update={"stats": stats})))  # type: ignore[arg-type]
    assert (method, df) == ("within-run", None)
    assert bounds[0] is None and bounds[1] is None and bounds[2] is None  # absent; zero mean
    assert bounds[3] == pytest.approx((0.9, 1.2), rel=1e-6)
    trials = {"output_tok_per_s": Estimate(mean=100.0, lo=97.5, hi=102.5, n=3, method="trials", se=0.6, df=2.0)}
    method, df, bounds = unpack_ci(pack_ci(base.model_copy(update={"stats": trials})))  # type: ignore[arg-type]
    assert (method, df) == ("trials", 2.0) and bounds[0] == pytest.approx((0.975, 1.025), rel=1e-6)


def test_intervals_packed_before_energy_had_one_still_read() -> None:
    """Rows written before energy per token had an interval hold four figures (37 bytes): they read
    with no energy interval; new rows carry the fifth (J/output token)."""
    import struct

    from infx.metrics.uncertainty import Estimate
    from infx.results.store import pack_ci, unpack_ci

    old = struct.pack("<Bf8f", 0, 2.0, 0.9, 1.1, *(float("nan"),) * 6)
    method, df, bounds = unpack_ci(old)
    assert (method, df, len(bounds)) == ("trials", 2.0, 5) and bounds[0] == pytest.approx((0.9, 1.1), rel=1e-6)
    assert bounds[1:] == [None] * 4
    base = make_result(make_point(2, 4, isl=1024, osl=1024), SEED_ARMS[0])
    e = Estimate(mean=0.5, lo=0.45, hi=0.55, n=3, method="trials", se=0.02, df=2.0)
    _, _, bounds = unpack_ci(pack_ci(base.model_copy(update={"stats": {"joules_per_output_token": e}})))  # type: ignore[arg-type]
    assert bounds[:4] == [None] * 4 and bounds[4] == pytest.approx((0.9, 1.1), rel=1e-6)


def test_result_json_carries_the_packed_intervals_always_from_its_stats() -> None:
    """result.json ``ci`` is the packed summary of ``stats`` (what ingest stores without reading the
    estimates): written from ``stats`` at every serialisation, so a stale value never reaches a file;
    a malformed one is refused on read."""
    import pydantic

    from infx.metrics import cipack
    from infx.metrics.result import BenchResult
    from infx.metrics.uncertainty import Estimate
    from infx.results.store import pack_ci

    base = make_result(make_point(2, 4, isl=1024, osl=1024), SEED_ARMS[0])
    assert base.model_dump(mode="json")["ci"] is None  # no stats, no summary
    a = {"output_tok_per_s": Estimate(mean=100.0, lo=97.5, hi=102.5, n=3, method="trials", se=0.6, df=2.0)}
    b = {"output_tok_per_s": Estimate(mean=100.0, lo=80.0, hi=120.0, n=3, method="trials", se=5.0, df=2.0)}
    ra = BenchResult.model_validate_json(base.model_copy(update={"stats": a}).model_dump_json())
    assert ra.ci == cipack.encode(cipack.pack_stats(a)) and pack_ci(ra) == cipack.pack_stats(a)
    stale = ra.model_copy(update={"stats": b})  # stats changed in memory, the old ci still attached
    rb = BenchResult.model_validate_json(stale.model_dump_json())
    assert rb.ci == cipack.encode(cipack.pack_stats(b)) != ra.ci
    assert cipack.unpack(pack_ci(rb))[2][0] == pytest.approx((0.8, 1.2), rel=1e-6)  # type: ignore[arg-type]
    for bad in ("not base64!", cipack.encode(b"\x00" * 10)):
        data = ra.model_dump(mode="json") | {"ci": bad}
        with pytest.raises(pydantic.ValidationError, match="ci"):
            BenchResult.model_validate(data)
