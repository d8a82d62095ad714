"""Historical: a curve's metric at a chosen interactivity, as of each date, equals what the store's as-of query
gives; a new image or recipe is a step. Reliability: done / failed / skipped per hardware and runner."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from infx.analysis.frontier import Direction, StepFrontier
from infx.analysis.history import CurveSel, history, reliability
from infx.results.store import Store
from infx.results.synthetic import CROSS_HARDWARE, write_cross_hardware_run, write_synthetic_run

DAYS = {"r1": (2026, 10, 1), "r2": (2026, 10, 15), "r3": (2026, 11, 1)}
SCALES = {"r1": 1.0, "r2": 1.25, "r3": 0.9}
SEL = CurveSel(model="dsv41flash", scenario="fixed-seq-len", isl=1024, osl=1024, precision="fp4", hardware="b200",
               framework="vllm")


def _store(tmp_path: Path, images: dict[str, str] | None = None) -> Store:
    root = tmp_path / "results"
    for run, day in DAYS.items():
        at = dt.datetime(*day, tzinfo=dt.UTC).timestamp()
        hw = tuple((r, f, s * SCALES[run]) for r, f, s in CROSS_HARDWARE)
        extra = {"image": images[run]} if images and run in images else {}
        write_cross_hardware_run(root, run, hw, seed=len(run) + int(run[1]), started_at=at, **extra)
    st = Store(tmp_path / "infx.db")
    st.ingest_dir(root)
    return st


def _as_of_value(st: Store, date: str, target: float) -> tuple[str, float]:
    """The store's as-of query, read directly: the view's points of the curve, their frontier, at ``target``."""
    view = st.view(st.as_of(date))
    keep = {(p.run_id, p.point_id) for p in view.points}
    rows = [r for r in st.measured(view.runs) if (r.run_id, r.point_id) in keep and r.workload.hardware == "b200"
            and r.workload.framework == "vllm"]
    runs = {r.run_id for r in rows}
    assert len(runs) == 1
    f = StepFrontier.build([r.figures.interactivity_median for r in rows],
                           [r.figures.total_tok_per_s / r.gpus_per_server for r in rows], Direction.MAX, Direction.MAX)
    got = f.interpolate(target)
    assert got is not None
    return runs.pop(), got[0]


def test_history_equals_the_stores_as_of_query_at_three_dates(tmp_path: Path) -> None:
    st = _store(tmp_path)
    try:
        dates = ["2026-10-05", "2026-10-20", "2026-11-05"]
        target = 20.0
        h = history(st, SEL, target, dates=["2026-09-01", *dates])
        assert h.points[0].value is None and h.points[0].note  # nothing had finished yet
        values = []
        for hp, date in zip(h.points[1:], dates, strict=True):
            run, want = _as_of_value(st, date, target)
            assert hp.run_id == run
            assert hp.value == pytest.approx(want, rel=1e-12)
            values.append(hp.value)
        assert [hp.run_id for hp in h.points[1:]] == ["r1", "r2", "r3"]
        assert values[1] > values[0] > values[2]  # the scales 1.0, 1.25, 0.9 show through
        assert not any(hp.step for hp in h.points)  # same image and recipe throughout
        # outside the measured range: no value, never an extrapolation
        far = history(st, SEL, 1e6, dates=dates[:1])
        assert far.points[0].value is None and "outside" in far.points[0].note
    finally:
        st.close()


def test_reliability_counts_per_hardware_and_runner(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_synthetic_run(root, "run-f")  # 16 done, one failed (start-up OOM), one skipped (infeasible)
    write_cross_hardware_run(root, "run-x")
    with Store(tmp_path / "infx.db") as st:
        st.ingest_dir(root)
        rows = {(r.run_id, r.hardware, r.runner): r for r in reliability(st)}
    f = rows[("run-f", "mi355x", "cluster:mi355x-amds")]
    assert (f.done, f.failed, f.skipped) == (16, 1, 1)
    assert f.failure_classes == {"infeasible": 1, "startup-oom": 1}
    assert f.success_rate == pytest.approx(16 / 17)
    b = rows[("run-x", "b200", "cluster:b200-nv")]
    assert (b.done, b.failed, b.skipped, b.failure_classes) == (16, 0, 0, {})


def test_history_marks_a_new_image_as_a_step(tmp_path: Path) -> None:
    st = _store(tmp_path, images={"r3": "vllm/vllm-openai:v0.99.0"})
    try:
        h = history(st, SEL, 20.0)  # default dates: each run's end
        assert [hp.run_id for hp in h.points] == ["r1", "r2", "r3"]
        assert [hp.step for hp in h.points] == [False, False, True]
        assert h.points[2].images == ["vllm/vllm-openai:v0.99.0"]
    finally:
        st.close()
