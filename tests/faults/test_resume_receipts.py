"""A kill between a point's status and its receipt leaves a point that was never final: the next run measures
it again (its receipt is what ``infx verify`` and ingest check), and nothing else."""

from __future__ import annotations

from pathlib import Path

from infx.results.receipt import RECEIPT_FILE, has_receipt
from infx.sweep.grouping import group_points
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import Orchestrator, SweepOptions
from tests.sweep.fakes import FakeMeasurer, FakeStarter, make_point


def test_a_done_point_without_its_receipt_is_measured_again(tmp_path: Path) -> None:
    points = [make_point("a", 1, c) for c in (1, 2, 4)]
    rd = RunDir(tmp_path / "run1")
    Orchestrator(rd, FakeStarter(), FakeMeasurer(), SweepOptions(), lambda e: None).run(group_points(points))
    assert all(has_receipt(rd.point_dir(p.point_id)) for p in points)
    (rd.point_dir("a-tp1-c2") / RECEIPT_FILE).unlink()  # as a kill -9 right after status.json leaves it
    again = FakeMeasurer()
    Orchestrator(rd, FakeStarter(), again, SweepOptions(), lambda e: None).run(group_points(points))
    assert again.measured == ["a-tp1-c2"]
    assert has_receipt(rd.point_dir("a-tp1-c2"))
