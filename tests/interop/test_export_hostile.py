"""A damaged point in a run being exported is skipped with one line naming its point.json, never a
ZeroDivisionError: GPU counts that are zero make InferenceX's per-GPU figures undefined."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app
from infx.matrix.point import Point
from tests.interop.helpers import fixed_point, multinode_point, write_run

_register_all()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("point", "edit", "says"), [
    (fixed_point(4, 8), lambda r: r.update({"pp": 0}), "tp x pp x pcp-size is 0 GPUs"),
    (fixed_point(4, 8), lambda r: r.update({"pcp-size": 0}), "tp x pp x pcp-size is 0 GPUs"),
    (multinode_point(8), lambda r: r["prefill"].update({"tp": 0}), "the prefill pool has 0 GPUs"),
    (multinode_point(8), lambda r: r["prefill"].update({"num-worker": 0}), "the prefill pool has 0 GPUs"),
])
def test_a_zero_gpu_count_is_skipped_with_one_line(tmp_path: Path, point: Point, edit: Callable[[dict], None],
                                                   says: str) -> None:
    write_run(tmp_path, "r1", [point, fixed_point(4, 16)])
    pj = next(p for p in tmp_path.glob("r1/points/*/point.json") if json.loads(p.read_text())["point"]["conc"] == 8)
    data = json.loads(pj.read_text())
    edit(data["point"])
    pj.write_text(json.dumps(data))
    r = CliRunner().invoke(app, ["export", str(tmp_path), "-o", str(tmp_path / "out")])
    assert "Traceback" not in r.stderr and r.exception is None or isinstance(r.exception, SystemExit), r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].startswith(f"{pj}: error: not exported: {says}"), r.stderr
    assert len(list((tmp_path / "out").rglob("agg_*.json"))) == 1  # the good point is still exported
