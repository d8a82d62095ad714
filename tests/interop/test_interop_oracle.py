"""InferenceX's own process_result.py, run unmodified on the raw client JSON infx exports, with the
environment its workflow sets: its agg_*.json must equal infx's export field by field (and key order)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.interop.export import agg, process_env, raw_client, result_filename
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.metrics.sections import PowerFigures, ResultExtra
from tests.interop.helpers import fixed_point, multinode_point, result_for


def run_oracle(oracle_dir: Path, work: Path, point: Point, result: BenchResult,
               extra_env: dict[str, str] | None = None) -> tuple[dict, dict]:
    work.mkdir(parents=True, exist_ok=True)
    name = result_filename(point, point.concs[0])
    raw = raw_client(point, result)
    (work / f"{name}.json").write_text(json.dumps(raw, indent=2))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", **process_env(point, name),
           **(extra_env or {})}
    cp = subprocess.run([sys.executable, str(oracle_dir / "process_result.py")], cwd=work, env=env,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return json.loads((work / f"agg_{name}.json").read_text()), agg(point, result, raw)


def assert_same(theirs: dict, ours: dict) -> None:
    for key in theirs:
        assert key in ours, f"oracle wrote {key!r}, infx did not"
        assert ours[key] == theirs[key], f"{key}: infx {ours[key]!r} != InferenceX {theirs[key]!r}"
    assert list(ours) == list(theirs), "same keys in the same order"


@pytest.mark.parametrize("kw", [
    {"tp": 4},
    {"tp": 8, "ep": 8, "dp-attn": True},
    {"tp": 2, "pp": 2, "pcp-size": 2, "dcp-size": 2},
    {"tp": 1, "recipe-fingerprint": "abc123", "spec-decoding": "mtp"},
])
def test_single_node_matches_process_result(oracle_dir: Path, tmp_path: Path, kw: dict) -> None:
    row = fixed_point(4, 16).to_row() | kw
    point = Point.from_row(row)
    theirs, ours = run_oracle(oracle_dir, tmp_path, point, result_for(point))
    assert_same(theirs, ours)
    assert theirs["power_valid"] == 0 and theirs["power_metric_schema_version"] == 2  # no telemetry file


@pytest.mark.parametrize("kw", [{}, {"decode_workers": 1, "hardware": True}, {"decode_workers": 0}])
def test_multinode_matches_process_result(oracle_dir: Path, tmp_path: Path, kw: dict) -> None:
    point = multinode_point(64, **kw)
    theirs, ours = run_oracle(oracle_dir, tmp_path, point, result_for(point),
                              {"POWER_ARTIFACT_DIR": str(tmp_path / "no-power"),
                               "POWER_RESULT_ROOT": str(tmp_path / "no-logs")})
    assert_same(theirs, ours)
    assert theirs["is_multinode"] is True and "prefill_tp" in theirs


def test_power_keys_match_aggregate_power(oracle_dir: Path, tmp_path: Path) -> None:
    """A point carrying energy figures (constant 400 W on each of 8 GPUs over the window) against
    InferenceX integrating a GPU CSV of exactly that: same energy keys, same rounding."""
    point = Point.from_row(fixed_point(4, 16).to_row() | {"tp": 4, "pp": 2})
    start, duration, gpus, watts = 1_780_000_000.0, 600.0, 8, 400.0
    result = result_for(point, started_at=start, duration_s=duration)
    result = result.model_copy(update={"extra": ResultExtra(power=PowerFigures(
        power_valid=True, total_gpu_energy_j=gpus * watts * duration, gpu_count=gpus))})
    csv = tmp_path / "gpu_metrics.csv"
    lines = ["timestamp, index, power.draw [W]"]
    for t in range(int(start) - 2, int(start + duration) + 3):
        lines += [f"{t}, {g}, {watts} W" for g in range(gpus)]
    csv.write_text("\n".join(lines) + "\n")
    theirs, ours = run_oracle(oracle_dir, tmp_path / "work", point, result, {"GPU_METRICS_CSV": str(csv)})
    assert theirs["power_valid"] == 1, "the oracle accepted the telemetry"
    assert_same(theirs, ours)
    assert ours["total_gpu_energy_j"] == 1_920_000.0 and ours["avg_power_w"] == 400.0
