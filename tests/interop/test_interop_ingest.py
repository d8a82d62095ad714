"""Round trip (export -> import gives back the same figures), malformed published files, and a
measured run compared with an imported one (frontiers per GPU / per node and the PR table)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app
from infx.diagnostics import InfxError
from infx.interop.ingest import imported_aggs, ingest_inferencex
from infx.interop.prtable import pr_comparison
from infx.results.store import SCHEMA_VERSION, Store
from tests.interop.helpers import CONCS, fixed_point, multinode_point, write_run

_register_all()
runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.output


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path]:
    """A measured run (TP=4 and TP=2 over four concurrencies, one multi-node point), exported."""
    root = tmp_path / "results"
    points = [fixed_point(4, c) for c in CONCS] + [fixed_point(2, c) for c in CONCS] + [multinode_point(64)]
    write_run(root, "mine", points)
    code, out = cli("ingest", str(root))
    assert code == 0, out
    code, out = cli("export", "--format", "inferencex", str(root), "-o", str(tmp_path / "exp"))
    assert code == 0, out
    assert "9 point(s) exported" in out
    return root, tmp_path / "exp" / "mine"


def test_round_trip_is_exact(exported: tuple[Path, Path], tmp_path: Path) -> None:
    root, exp = exported
    code, out = cli("ingest", "--format", "inferencex", str(exp), "--results", str(root), "--name", "ix")
    assert code == 0, out
    published = {p.name: json.loads(p.read_text()) for p in exp.glob("agg_*.json")}
    with Store(root / "infx.db") as store:
        assert store.origin("ix") == "imported" and store.origin("mine") == "measured"
        stored = {name: data for _, name, data in imported_aggs(store, "ix")}
        assert stored == published  # every field, bit for bit
        # the figures the analysis reads: per-GPU throughput and latencies equal the measured ones
        rows = {r[0]: r[1:] for r in store.conn.execute(
            "SELECT p.run_id || ':' || p.topology || ':' || p.conc, r.total_tok_per_s / p.gpus_per_server, "
            "r.output_tok_per_s, r.ttft_median, r.interactivity_median, r.e2el_p99 "
            "FROM points p JOIN results r USING (run_id, point_id)")}
    for key, mine in rows.items():
        if key.startswith("mine:"):
            assert rows["ix:" + key[5:]] == pytest.approx(mine, rel=1e-12)
    # exporting the imported run gives the published files back unchanged
    code, out = cli("export", "--format", "inferencex", str(root), "--run", "ix", "-o", str(tmp_path / "again"))
    assert code == 0, out
    again = {p.name: json.loads(p.read_text()) for p in (tmp_path / "again" / "ix").glob("agg_*.json")}
    assert again == published
    # the imported run is never the default run and never part of the measured run
    code, out = cli("report", str(root), "-o", str(tmp_path / "r.html"))
    assert code == 0, out
    assert "mine" in (tmp_path / "r.html").read_text()


def test_compare_measured_with_imported(exported: tuple[Path, Path]) -> None:
    root, exp = exported
    # published: the TP=4 points (one dropped), 10% slower; plus a point infx did not measure
    files = sorted(p for p in exp.glob("agg_*tp4*.json"))
    assert len(files) == len(CONCS)
    listing = []
    for f in files[1:]:
        d = json.loads(f.read_text())
        d["tput_per_gpu"] *= 0.9
        d["median_ttft"] *= 1.1
        listing.append(d)
    extra = dict(listing[0], conc=1024)
    combined = exp.parent / "agg_published.json"
    combined.write_text(json.dumps(listing + [extra]))  # the collection step's combined list file
    code, out = cli("ingest", "--format", "inferencex", str(combined), "--results", str(root), "--name", "pub")
    assert code == 0, out
    with Store(root / "infx.db") as store:
        cmp = pr_comparison(store, root, "mine", "pub")
    assert len(cmp.pairs) == len(CONCS) - 1
    row = {r.metric: r for r in cmp.pairs[0].rows}
    # measured once (no trials): the deltas are shown, but no better/worse is claimed (issue 21)
    assert row["tput_per_gpu"].verdict == "inconclusive" and row["tput_per_gpu"].delta_pct == pytest.approx(100 / 9)
    assert row["median_ttft"].verdict == "inconclusive" and row["median_ttft"].unit == "ms"
    assert row["median_ttft"].delta_pct == pytest.approx(-100 / 11)
    # with a +-2 % interval across trials: 10 % apart is better, 0 % apart is the same within 5 %
    from infx.interop.prtable import compare_published, measured_aggs

    measured, _ = measured_aggs(root, "mine")
    from infx.interop.ingest import imported_aggs

    with Store(root / "infx.db") as store:
        published = [(pid, d) for pid, _, d in imported_aggs(store, "pub")]
    ci = {pid: {k: (0.98, 1.02) for k in ("tput_per_gpu", "median_ttft", "median_intvty")} for pid, _ in measured}
    noisy = compare_published(measured, published, run_id="mine", published_run="pub", intervals=ci)
    row = {r.metric: r for r in noisy.pairs[0].rows}
    assert row["tput_per_gpu"].verdict == "better" and row["median_ttft"].verdict == "better"
    assert row["median_intvty"].verdict == "same" and row["tput_per_gpu"].ci_lo is not None
    ci = {pid: {k: (0.8, 1.2) for k in ("tput_per_gpu",)} for pid, _ in measured}
    wide = compare_published(measured, published, run_id="mine", published_run="pub", intervals=ci)
    assert {r.metric: r for r in wide.pairs[0].rows}["tput_per_gpu"].verdict == "inconclusive"
    # unmatched both ways: the dropped TP=4 point, every TP=2 and multi-node point; the extra published one
    assert len(cmp.unmatched_measured) == 1 + len(CONCS) + 1
    assert any("conc=4 " in u or u.endswith("conc=4") or "conc=4 (" in u for u in cmp.unmatched_measured)
    assert len(cmp.unmatched_published) == 1 and "conc=1024" in cmp.unmatched_published[0]
    # the frontier comparison and the table through the CLI, per GPU and per node
    for per in ("gpu", "node"):
        code, out = cli("compare", str(root), "--run", "mine", "--baseline", "pub", "--per", per,
                        "--gpus-per-node", "8", "--json")
        assert code == 0, out
        data = json.loads(out[out.index("{"):])
        assert data["frontiers"]["comparisons"], "the TP=4 arms share a frontier comparison"
        ratios = [e["ratio"] for c in data["frontiers"]["comparisons"] for e in c["ladder"] if e["ratio"]]
        assert ratios and all(r > 1.05 for r in ratios)  # measured is ~11% above the published points
        assert len(data["inferencex"]["pairs"]) == len(CONCS) - 1
    code, out = cli("compare", str(root), "--run", "mine", "--baseline", "pub", "--per", "gpu")
    assert code == 0, out
    assert "InferenceX comparison" in out and "no published match" in out and "+11.1%" in out
    # the report puts the imported run on the measured run's frontiers and prints the same table
    code, out = cli("report", str(root), "--run", "mine", "--baseline", "pub", "-o", str(root / "r.html"))
    assert code == 0, out
    page = (root / "r.html").read_text()
    assert 'id="inferencex-comparison"' in page and "Published points with no measured match (1)" in page
    assert "+11.1%" in page and "<td>inconclusive</td>" in page  # measured once: no colour, no claim


def test_plain_ingest_restores_imported_runs(exported: tuple[Path, Path]) -> None:
    root, exp = exported
    assert cli("ingest", "--format", "inferencex", str(exp), "--results", str(root), "--name", "ix")[0] == 0
    with Store(root / "infx.db") as store:
        before = imported_aggs(store, "ix")
    for suffix in ("", "-wal", "-shm"):
        (root / f"infx.db{suffix}").unlink(missing_ok=True)
    code, out = cli("ingest", str(root))
    assert code == 0 and "restored imported run ix" in out, out
    with Store(root / "infx.db") as store:
        assert store.origin("ix") == "imported" and imported_aggs(store, "ix") == before


def _bad(tmp_path: Path) -> dict[str, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    good = tmp_path / "agg_good.json"
    a = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "interop" / "agg_single.json").read_text())
    good.write_text(json.dumps(a))
    files = {"good": good}
    for name, text in {
        "broken": '{"hw": "b200",\n  "conc": }',
        "raw": json.dumps({"model_id": "m", "total_token_throughput": 1.0, "date": "x"}),
        "missing": json.dumps({k: v for k, v in a.items() if k != "conc"}),
        "wrongtype": json.dumps(a | {"conc": "sixteen"}),
        "disagg": json.dumps(a | {"disagg": True}),
        "badlist": json.dumps([a, {k: v for k, v in a.items() if k != "tp"}]),
        "empty": "[]",
        "scalar": "3",
    }.items():
        files[name] = tmp_path / f"agg_{name}.json"
        files[name].write_text(text)
    return files


def test_malformed_files_are_reported_and_nothing_is_written(tmp_path: Path) -> None:
    files = _bad(tmp_path / "in")
    root = tmp_path / "results"
    with pytest.raises(InfxError) as err:
        ingest_inferencex(list(files.values()), root, "ix")
    text = "\n".join(str(d) for d in err.value.diagnostics)
    for name in files:
        if name != "good":
            assert f"agg_{name}.json" in text, f"{name} not reported:\n{text}"
    assert "agg_broken.json:2:11: error: invalid JSON" in text
    assert "raw bench-client result" in text
    assert "conc" in text and "disagg" in text and "lacks tp" in text and "empty list" in text
    assert not (root / "ix").exists() and not (root / "infx.db").exists()
    code, out = cli("ingest", "--format", "inferencex", str(files["broken"]), "--results", str(root))
    assert code == 2 and "invalid JSON" in out and "Traceback" not in out
    # --skip-bad imports the good file only; a list file with one bad entry is rejected whole
    rep = ingest_inferencex(list(files.values()), root, "ix", skip_bad=True)
    assert rep.points == 1 and rep.files == 1 and len(rep.problems) == len(files) - 1
    with sqlite3.connect(root / "infx.db") as c:
        assert c.execute("SELECT COUNT(*) FROM imported_agg WHERE run_id='ix'").fetchone()[0] == 1
    assert json.loads((root / "ix" / "import.json").read_text())["sources"][0]["points"] == 1


def test_imported_never_replaces_a_measured_run(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "mine", [fixed_point(4, 8)])
    agg = Path(__file__).resolve().parents[1] / "fixtures" / "interop" / "agg_single.json"
    with pytest.raises(InfxError, match="measured run"):
        ingest_inferencex([agg], root, "mine")
    assert not (root / "mine" / "import.json").exists()
    (root / "notes").mkdir()
    (root / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(InfxError, match="not an imported run"):
        ingest_inferencex([agg], root, "notes")
    assert (root / "notes" / "keep.txt").read_text() == "mine"  # a foreign directory is never replaced
    # importing the same name again replaces the imported run as a whole (idempotent)
    copy = tmp_path / "agg_copy.json"
    copy.write_bytes(agg.read_bytes())
    for _ in range(2):  # the directory names agg_single.json again (read once); the copy is a duplicate point
        rep = ingest_inferencex([agg, copy, agg.parent], root, "ix")
    assert rep.files == 3 and rep.points == 2 and rep.duplicates == 1
    with Store(root / "infx.db") as store:
        assert len(imported_aggs(store, "ix")) == 2
        assert store.measured_run_ids() == []  # mine was never ingested; ix is not a measured run


def test_migration_6_marks_existing_runs_measured(tmp_path: Path) -> None:
    """A store written before migration 6 gains the origin column (its runs are measured ones)."""
    root = tmp_path / "results"
    write_run(root, "old", [fixed_point(4, 8)])
    with Store(root / "infx.db", schema_target=2) as store:
        store.ingest_dir(root)
        assert store.schema_version() == 2
    with Store(root / "infx.db") as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.origin("old") == "measured" and store.measured_run_ids() == ["old"]
        assert store.conn.execute("SELECT COUNT(*) FROM imported_agg").fetchone()[0] == 0
