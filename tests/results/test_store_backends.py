"""The store's behaviour on both backends (SQLite and PostgreSQL): idempotent ingest, whole-point replacement,
refusals kept in the quarantine and released when fixed, imported runs, copying a store, and the schema every
revision path builds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from infx.analysis.dataset import load_measured
from infx.results.layout import ResultsDir
from infx.results.store import SCHEMA_VERSION, PointBundle, Store, make_bundle
from infx.results.store import schema as store_schema
from infx.results.store.copy import copy_store
from infx.results.store.rows import ImportedAggRow, PointRow, ResultRow
from infx.results.telemetry_rows import COLUMNS as TELEMETRY_COLUMNS

SEED_COUNTS = {"runs": 2, "points": 24, "results": 22, "startup": 22, "failures": 2}
PID = "dsv41flash_tp4_conc16_kvnone_spec-mtp"


def test_ingest_is_idempotent_and_reads_back(store_url: str, seed_results: ResultsDir) -> None:
    with Store(store_url) as st:
        first = st.ingest_dir(seed_results.root)
        assert (first.ingested, first.skipped, first.problems) == (24, 0, [])
        before = st.table_counts()
        again = st.ingest_dir(seed_results.root)
        assert (again.ingested, again.unchanged) == (0, 24)
        assert st.table_counts() == before and st.counts() == SEED_COUNTS
        assert st.run_ids() == ["baseline", "pr-1234"] and st.measured_run_ids() == ["baseline", "pr-1234"]
        measured = load_measured(st, gpus_per_node=lambda run, runner: 8)
        lines = st.point_lines("pr-1234")
    assert len(measured) == 22
    oom = next(ln for ln in lines if ln.state == "failed")
    assert (oom.failure_class, oom.topology) == ("startup-oom", "TP=2") and "HIP out of memory" in oom.log_tail


def test_a_changed_point_replaces_every_row_of_it(store_url: str, seed_results: ResultsDir) -> None:
    with Store(store_url) as st:
        st.ingest_dir(seed_results.root)
    result = seed_results.read_result("pr-1234", PID)
    seed_results.write_result("pr-1234", PID, result.model_copy(update={"metrics": result.metrics.model_copy(
        update={"interactivity_median": 999.0})}))
    with Store(store_url) as st:
        rep = st.ingest_dir(seed_results.root)
        assert (rep.ingested, rep.unchanged) == (1, 23)
        got = [m for m in st.measured(["pr-1234"]) if m.point_id == PID]
        assert [m.figures.interactivity_median for m in got] == [999.0]
        assert st.counts() == SEED_COUNTS


def test_refused_points_are_quarantined_and_released_once_fixed(store_url: str, seed_results: ResultsDir) -> None:
    path = seed_results.file("pr-1234", PID, "result.json")
    good = path.read_text()
    path.write_text(good[:300])  # truncated mid-write
    other = "dsv41flash_tp2_conc8_kvnone_spec-mtp"
    big = seed_results.file("pr-1234", other, "result.json")
    data = json.loads(big.read_text())
    data["metrics"]["issued"] = 10**30  # no store holds it
    big.write_text(json.dumps(data))
    with Store(store_url) as st:
        rep = st.ingest_dir(seed_results.root)
        assert (rep.ingested, rep.skipped) == (22, 2)
        q = {e.point_id: e for e in st.quarantined()}
        assert set(q) == {PID, other}
        assert q[PID].rule == "unreadable" and q[PID].source == str(path) and q[PID].line is not None
        assert q[PID].digest is not None and "invalid JSON" in q[PID].reason
        assert q[other].rule == "unstorable" and "64-bit" in q[other].reason
        st.ingest_dir(seed_results.root)
        assert {e.point_id: e.times for e in st.quarantined()} == {PID: 2, other: 2}  # seen again, kept once
    path.write_text(good)
    with Store(store_url) as st:
        rep = st.ingest_dir(seed_results.root)
        assert rep.ingested == 1
        assert [e.point_id for e in st.quarantined()] == [other]  # the fixed file released its entry


def test_a_run_without_a_valid_manifest_is_quarantined(store_url: str, seed_results: ResultsDir) -> None:
    manifest = seed_results.manifest_path("baseline")
    good = manifest.read_text()
    manifest.write_text("{}")
    with Store(store_url) as st:
        rep = st.ingest_dir(seed_results.root)
        assert rep.skipped == 6
        (entry,) = st.quarantined()
        assert (entry.rule, entry.run_id, entry.point_id) == ("bad-manifest", "baseline", None)
        manifest.write_text(good)
        st.ingest_dir(seed_results.root)
        assert st.quarantined() == []


def test_imported_rows_round_trip_in_import_order(store_url: str) -> None:
    from infx.results.store.rows import ImportedRows
    from infx.results.synthetic import make_manifest

    with Store(store_url) as st:
        imported = []
        for k, pid in enumerate(("zz", "aa", "mm")):
            point = PointRow(run_id="ix", point_id=pid, digest=pid, model="m", model_prefix="m", hardware="h100",
                             runner="h100", framework="vllm", precision="fp8", topology="TP=8", tp=8, pp=1, ep=1,
                             dp_attn=0, dcp=1, pcp=1, multinode=0, gpus_per_server=8, conc=4 << k,
                             scenario="fixed-seq-len", isl=1024, osl=1024, spec_decoding="none", kv_offloading=None,
                             image="img", launch_fingerprint=None, state="done",
                             point_json=json.dumps({"point": {"conc": 4 << k}}))
            imported.append(ImportedRows(
                point, ResultRow(run_id="ix", point_id=pid, complete=1, total_tok_per_s=100.0 * (k + 1),
                                 output_tok_per_s=10.0),
                ImportedAggRow(run_id="ix", point_id=pid, name=f"agg_{pid}.json", source="x", agg_json="{}")))
        assert st.check_imported(imported) == []
        bad = imported[0]._replace(point=imported[0].point._replace(conc=10**20))
        assert "64-bit" in st.check_imported([bad])[0][1]
        st.replace_imported_run(make_manifest("ix"), imported)
        st.replace_imported_run(make_manifest("ix"), imported)  # replaced whole, not added to
        assert [name for _, name, _ in st.imported_aggs("ix")] == ["agg_zz.json", "agg_aa.json", "agg_mm.json"]
        assert st.origin("ix") == "imported" and st.measured_run_ids() == []
        assert sorted(m.conc for m in st.measured(["ix"])) == [4, 8, 16]


def test_copy_into_another_store_is_idempotent(store_url: str, seed_results: ResultsDir, tmp_path: Path) -> None:
    local = tmp_path / "local.db"
    with Store(local) as src:
        src.ingest_dir(seed_results.root)
        with Store(store_url) as dst:
            first = copy_store(src, dst)
            assert (first.runs, first.written, first.unchanged) == (2, 24, 0)
            again = copy_store(src, dst)
            assert (again.written, again.unchanged) == (0, 24)
            assert dst.table_counts() == src.table_counts()
            assert [m._replace(ci=None) for m in dst.measured()] == [m._replace(ci=None) for m in src.measured()]
            assert dst.manifest("pr-1234") == src.manifest("pr-1234")


def _good_and_bad(telemetry: object) -> tuple[PointBundle, PointBundle]:
    """Two points of run ``m``: one as measured, one whose result carries ``telemetry`` (built unvalidated)."""
    from infx.results.layout import PointStatus
    from infx.results.synthetic import SEED_ARMS, make_point, make_result

    ok, bad = make_point(2, 4, isl=1024, osl=1024), make_point(2, 8, isl=1024, osl=1024)
    r_bad = make_result(bad, SEED_ARMS[0])
    r_bad = r_bad.model_copy(update={"extra": r_bad.extra.model_copy(update={"telemetry": telemetry})})
    return (make_bundle("m", ok, PointStatus(state="done"), make_result(ok, SEED_ARMS[0])),
            make_bundle("m", bad, PointStatus(state="done"), r_bad))


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the unvalidated value
def test_a_point_no_store_can_hold_is_rejected_alone(store_url: str) -> None:
    from infx.metrics.sections import TelemetrySummary
    from infx.results.synthetic import make_manifest

    # a value no store column can hold: the typed contract refuses it at read, so it is built unvalidated
    good, bad = _good_and_bad(TelemetrySummary.model_construct(expected_gpu_count={"not": "a number"}))
    with Store(store_url) as st:
        st.upsert_run(make_manifest("m"))
        written, unchanged = st.add_points([good, bad])
        assert (written, unchanged) == (1, 0)
        assert [(b.point.point_id, "telemetry.expected_gpu_count" in why) for b, why in st.rejected] == [
            (bad.point.point_id, True)]
        assert st.counts()["points"] == 1


def test_a_point_whose_rows_cannot_be_built_leaves_no_row_behind(store_url: str) -> None:
    """A result that breaks while its rows are built (here its telemetry, after the points and results rows are
    made) is rejected whole: none of its rows reaches the store, the points beside it do."""
    from infx.metrics.sections import TelemetrySummary
    from infx.results.synthetic import make_manifest

    # telemetry_row reads power.get(...): AttributeError
    good, bad = _good_and_bad(TelemetrySummary.model_construct(power=None))
    with Store(store_url) as st:
        st.upsert_run(make_manifest("m"))
        written, _ = st.add_points([bad, good])
        assert written == 1
        assert [(b.point.point_id, why.startswith("cannot be stored: AttributeError")) for b, why in st.rejected] == [
            (bad.point.point_id, True)]
        counts = st.table_counts()
    assert (counts["points"], counts["results"], counts["telemetry"]) == (1, 1, 0)


# -------------------------------------------------------------------------------------------- the schema


def _shape(url: str) -> dict[str, tuple[list[str], list[str], list[tuple[str, tuple[str, ...]]]]]:
    """table -> (columns, primary key, indexes) as the database has them."""
    from infx.results.store.url import parse

    engine = sa.create_engine(parse(url).sqlalchemy_url)
    try:
        insp = sa.inspect(engine)
        return {t: (sorted(c["name"] for c in insp.get_columns(t)), insp.get_pk_constraint(t)["constrained_columns"],
                    sorted((i["name"], tuple(i["column_names"])) for i in insp.get_indexes(t)))
                for t in insp.get_table_names() if t != "alembic_version"}
    finally:
        engine.dispose()


def _expected() -> dict[str, tuple[list[str], list[str], list[tuple[str, tuple[str, ...]]]]]:
    return {t.name: (sorted(t.c.keys()), [c.name for c in t.primary_key.columns],
                     sorted((i.name, tuple(c.name for c in i.columns)) for i in t.indexes if i.name))
            for t in store_schema.metadata.sorted_tables}


def test_every_revision_path_builds_the_one_schema(store_url: str, tmp_path: Path) -> None:
    """Revisions 0001..head applied one by one, and an empty store created at head, both give schema.py."""
    with Store(store_url, schema_target=1) as st:
        assert st.schema_version() == 1
    with Store(store_url) as st:  # 0002..head, in place
        assert st.schema_version() == SCHEMA_VERSION
    assert _shape(store_url) == _expected()
    fresh = str(tmp_path / "fresh.db")
    with Store(fresh):
        pass
    assert _shape(fresh) == _expected()


def test_row_types_and_builders_follow_the_schema() -> None:
    assert PointRow._fields == tuple(store_schema.points.c.keys())
    assert ResultRow._fields == tuple(store_schema.results.c.keys())
    assert ImportedAggRow._fields == tuple(store_schema.imported_agg.c.keys())
    assert tuple(store_schema.telemetry.c.keys()) == TELEMETRY_COLUMNS


def test_the_shipped_revisions_end_at_the_schema_version() -> None:
    from infx.results.store.migrate import head_revision

    assert head_revision() == f"{SCHEMA_VERSION:04d}"


def test_an_older_infx_sees_the_mirror_and_refuses(tmp_path: Path) -> None:
    """schema_version mirrors the Alembic revision: an infx from before Alembic reads it and refuses."""
    with Store(tmp_path / "x.db"):
        pass
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(f"{SCHEMA_VERSION:04d}",)]


@pytest.mark.parametrize("bump", ["alembic", "mirror"])
def test_a_store_at_a_newer_revision_is_refused(store_url: str, bump: str) -> None:
    with Store(store_url):
        pass
    from infx.results.store.url import parse

    engine = sa.create_engine(parse(store_url).sqlalchemy_url)
    with engine.begin() as conn:
        if bump == "alembic":
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
        else:
            conn.execute(sa.text("UPDATE schema_version SET version = 99"))
    engine.dispose()
    from infx.diagnostics import InfxError

    with pytest.raises(InfxError, match="is newer than this infx"):
        Store(store_url)
