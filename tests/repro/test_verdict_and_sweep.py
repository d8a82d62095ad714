"""The rerun verdict on request-level records, and the sweep's one bundle call: every measured point of a
sweep (fake executors: no engine can run in a unit test) gets a receipt that verifies; re-measuring a point
replaces it."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from infx.repro.verdict import compare_point
from infx.results.receipt import RECEIPT_FILE, read_receipt, verify_point_dir
from infx.sweep.executors import LaunchGroup
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


def test_verdicts(tmp_path: Path) -> None:
    p = demo_point()
    a = point_dir(tmp_path / "r", "a", p, seed=1, n=1500)
    a2 = point_dir(tmp_path / "r", "a2", p, seed=2, n=1500)
    same = compare_point([a], [a])
    assert same.verdict == "within-noise" and all(m.ratio == 1.0 for m in same.metrics)
    assert same.trials_original == 1 and same.notes  # one trial: the note says what the interval covers
    slow = _scaled(a, tmp_path / "slow", 1.5)
    one = compare_point([a], [slow])
    assert one.verdict == "inconclusive"  # reads worse, but one trial per side cannot say so
    assert all("reads worse" in m.note for m in one.metrics if m.metric in ("ttft_ms", "tpot_ms"))
    slow2 = _scaled(a2, tmp_path / "slow2", 1.5)
    two = compare_point([a, a2], [slow, slow2])
    assert two.verdict == "worse"
    tpot = next(m for m in two.metrics if m.metric == "tpot_ms")
    assert 1.4 < tpot.ci_low < 1.5 < tpot.ci_high < 1.6  # type: ignore[operator]
    assert compare_point([slow, slow2], [a, a2]).verdict == "better"
    assert compare_point([a], [tmp_path / "nothing"]).verdict == "inconclusive"


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
