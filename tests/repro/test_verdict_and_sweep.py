"""The rerun verdict (the shared noise-aware comparison over result.json's stats) and `infx repro --trials`,
and the sweep's one bundle call: every measured point of a sweep (fake executors: no engine can run in a unit
test) gets a receipt that verifies; re-measuring a point replaces it."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from infx.repro.verdict import compare_point
from infx.results.receipt import RECEIPT_FILE, read_receipt, verify_point_dir
from infx.sweep.grouping import LaunchGroup
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator, SweepOptions
from tests.repro.helpers import demo_point, point_dir
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_point


def _scaled(src: Path, dest: Path, factor: float) -> Path:
    """A copy of a point whose request timings after the send are stretched by ``factor``."""
    shutil.copytree(src, dest)
    rows = [json.loads(line) for line in gzip.decompress((src / "records.jsonl.gz").read_bytes()).splitlines()]
    for r in rows:
        s = r["send_ns"]
        for k in ("first_token_ns", "last_token_ns", "end_ns"):
            r[k] = s + int((r[k] - s) * factor)
        r["chunk_ns"] = [s + int((c - s) * factor) for c in r["chunk_ns"]]
    (dest / "records.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    return dest


def _with_trials(d: Path, per_trial: list[dict[str, float]]) -> Path:
    """Rewrite the point's result.json as measured with ``--trials N``: one Trial per entry of ``per_trial``
    (headline figures), and ``stats`` across them by the shared Student-t (issue 21's trial_estimates)."""
    from infx.metrics.result import BenchResult, Trial
    from infx.metrics.trialstats import headline_values, sample_counts, trial_estimates

    res = BenchResult.model_validate_json((d / "result.json").read_text())
    values = []
    for fig in per_trial:
        v = headline_values(res.metrics)
        v.update(fig)
        values.append(v)
    counts = [sample_counts(res.metrics)] * len(values)
    trials = [Trial(trial=k, started_at=0.0, ended_at=1.0, warmup=k == 0, window_ns=(0, 1), metrics=res.metrics)
              for k in range(len(values))]
    res = res.model_copy(update={"trials": trials, "stats": trial_estimates(values, counts)})
    (d / "result.json").write_text(res.model_dump_json())
    return d


def _figs(tp: float, lat: float, jitter: float) -> list[dict[str, float]]:
    return [{"output_tok_per_s": tp * (1 + j), "ttft_median": lat * (1 - j), "tpot_median": lat / 5 * (1 - j),
             "e2el_median": lat * 4 * (1 - j)} for j in (-jitter, 0.0, jitter)]


def test_one_trial_a_side_reads_equivalent_or_inconclusive_never_a_winner(tmp_path: Path) -> None:
    p = demo_point()
    a = point_dir(tmp_path / "r", "a", p, seed=1, n=1500)  # a result without stats: within-run from its records
    same = compare_point(a, a)
    assert all(m.ratio == 1.0 and m.method_original == "within-run" for m in same.metrics)
    # request latencies resample tightly: equivalent; throughput's ten time blocks leave it wider than +-5%
    assert {m.metric: m.verdict for m in same.metrics} == {
        "output_tok_per_s": "inconclusive", "ttft_median": "equivalent", "tpot_median": "equivalent",
        "e2el_median": "equivalent"}, same
    assert same.verdict == "inconclusive" and same.text == "inconclusive: 1 more trial(s) would decide"
    assert all(m.text.startswith("equivalent within ±5%") for m in same.metrics if m.verdict == "equivalent")
    assert compare_point(a, a, margin=0.2).verdict == "equivalent"
    assert same.trials_original == same.trials_rerun == 1 and "one trial" in same.notes[0]
    slow = _scaled(a, tmp_path / "slow", 1.5)
    one = compare_point(a, slow)
    assert one.verdict == "inconclusive" and "more trial(s) would decide" in one.text, one
    tpot = next(m for m in one.metrics if m.metric == "tpot_median")
    assert tpot.verdict == "inconclusive" and "within-run interval only" in tpot.text
    assert 1.4 < tpot.ratio < 1.6 and tpot.trials_needed and tpot.trials_needed >= 1  # type: ignore[operator]
    nothing = compare_point(a, tmp_path / "nothing")
    assert nothing.verdict == "inconclusive" and nothing.trials_rerun == 0
    assert all("the rerun has no" in m.text for m in nothing.metrics)


def test_trials_name_the_winner_with_its_interval_and_equivalence(tmp_path: Path) -> None:
    p = demo_point()
    orig = _with_trials(point_dir(tmp_path / "r", "o", p, seed=1), _figs(100.0, 50.0, 0.01))
    faster = _with_trials(point_dir(tmp_path / "r", "f", p, seed=2), _figs(130.0, 40.0, 0.01))
    same = _with_trials(point_dir(tmp_path / "r", "s", p, seed=3), _figs(100.5, 50.2, 0.01))
    v = compare_point(orig, faster)
    assert v.verdict == "better" and v.trials_original == v.trials_rerun == 3 and not v.notes
    tp = next(m for m in v.metrics if m.metric == "output_tok_per_s")
    assert tp.method_rerun == "trials" and tp.text.startswith("rerun better by 30.0% [")
    assert 1.2 < tp.ratio_lo < 1.3 < tp.ratio_hi < 1.4  # type: ignore[operator]
    assert "rerun better by" in v.text and "(95% CI, 3 trials)" in v.text
    assert compare_point(faster, orig).verdict == "worse"
    eq = compare_point(orig, same)
    assert eq.verdict == "equivalent", eq
    # three trials of the rerun against one of the original: still no winner (the original's side is within-run)
    single = point_dir(tmp_path / "r", "one", p, seed=1, n=1500)
    lone = compare_point(single, faster)
    assert lone.verdict == "inconclusive" and "the original has one trial" in lone.notes[0]
    assert all(m.verdict == "inconclusive" and "within-run interval only" in m.text for m in lone.metrics)
    # a tighter margin than the difference makes equivalence unprovable
    assert compare_point(orig, same, margin=0.001).verdict == "inconclusive"


def test_repro_trials_pass_through_to_the_sweeps_own_trials(tmp_path: Path) -> None:
    from infx.sweep.rerun import prepare_rerun
    from tests.repro.helpers import bundle, render

    p = demo_point()
    b = bundle(tmp_path / "res", "orig", p, render(p))
    prep, payload = prepare_rerun(b, tmp_path / "out", "again")
    assert prep.request.load.trials_for(payload.point_id) == 1 and prep.request.load.trials is None
    prep3, _ = prepare_rerun(b, tmp_path / "out", "again3", trials=3)
    assert prep3.request.load.trials == 3 and prep3.request.load.trials_for(payload.point_id) == 3
    assert prep3.request.load.model_dump(exclude={"trials"}) == prep.request.load.model_dump(exclude={"trials"})


def test_sweep_writes_a_receipt_per_measured_point_and_replaces_it(tmp_path: Path) -> None:
    rd = RunDir(tmp_path, "run1")
    pts = [make_point(conc=1), make_point(conc=2)]
    group = LaunchGroup("fp1", pts, engine="vllm", image="img")
    orch = Orchestrator(rd, FakeStarter(), FakeMeasurer(), SweepOptions())
    orch.run([group])
    receipts = {}
    for pt in pts:
        d = rd.point_dir(pt.point_id)
        v = verify_point_dir(d)
        assert v.ok and v.members >= 4, v.problems
        r = read_receipt(d)
        assert r.payload["point_id"] == pt.point_id and r.payload["run_id"] == "run1"
        assert {m.path for m in r.members} >= {"point.json", "status.json", "result.json", "engine.log"}
        receipts[pt.point_id] = r.receipt_id
    # measure the first point again: its receipt is dropped as it starts, then written over the new files
    victim = pts[0].point_id
    (rd.point_dir(victim) / "result.json").unlink()
    Orchestrator(rd, FakeStarter(), FakeMeasurer(), SweepOptions()).run([group])
    assert verify_point_dir(rd.point_dir(victim)).ok
    assert read_receipt(rd.point_dir(victim)).receipt_id != receipts[victim]
    assert read_receipt(rd.point_dir(pts[1].point_id)).receipt_id == receipts[pts[1].point_id]  # reused: untouched
    assert (rd.point_dir(victim) / RECEIPT_FILE).is_file()
