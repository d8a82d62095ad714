"""``kill -9`` of ``infx run`` on the disaggregated CPU deployment (vllm-router + a prefill and a decode vLLM-CPU
worker passing KV through a scratch directory): at start-up and mid-point, then the same command again. After
each kill no process of the killed run is alive (router, workers, their children: every process group it
recorded is empty); after the final run its one point is measured exactly once, ``infx verify`` passes, and no
temp file or KV directory of the killed runs is left. Slow: run under ``flock /tmp/infx-engine.lock`` (two vLLM
servers and the router; the router comes from ``make router-venv``)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from infx.sweep.layout import RunDir
from tests.faults.killing import REPO, done, env, kill_when, of_workspace, records

KEY = "disagg-tinyllama-bf16-cpu-vllm"
ROUTER_VENV = REPO / ".infx" / "router-venv"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (ROUTER_VENV / "bin" / "vllm-router").exists(),
                                                   reason="vllm-router venv missing: run `make router-venv`")]
CATALOG = f"""{KEY}:
  image: local
  model: infx/tinyllama
  model-prefix: tinyllama
  runner: local
  precision: bf16
  framework: vllm
  multinode: true
  disagg: true
  router: {{ name: vllm-router, version: 0.1.17 }}
  kv-p2p-transfer: example-connector
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: 64
      search-space:
      - prefill: {{ num-worker: 1, tp: 1, ep: 1, dp-attn: false }}
        decode: {{ num-worker: 1, tp: 1, ep: 1, dp-attn: false }}
        conc-list: [2]
"""


def _kv_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("infx-kv-*"))


@pytest.mark.timeout(1200)
def test_kill_9_of_a_disaggregated_deployment_at_start_up_and_mid_point_then_resume(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run([sys.executable, "-m", "infx", "init", str(ws)], env=env(ws), check=True, capture_output=True)
    (ws / "configs" / "cpu-master.yaml").write_text(CATALOG)  # the deployment alone: one point
    results = ws / "results"
    argv = [sys.executable, "-m", "infx", "run", "--config-keys", KEY, "--results", str(results),
            "--prompts-per-conc", "1", "--ready-timeout", "600"]
    environ = env(ws, INFX_ROUTER_VENV=str(ROUTER_VENV.resolve()))
    rd = RunDir(results, KEY)
    kv_before = _kv_dirs()

    # 1. at start-up: the workers are recorded, the router not started yet, nothing measured
    kill_when(argv, ws, tmp_path / "kill1.log", lambda: bool(records(ws)), "start-up", environ)
    assert done(rd) == set()
    # 2. mid-point: router and both workers up, the point being measured
    log2 = tmp_path / "kill2.log"
    recs = kill_when(argv, ws, log2, lambda: ": measuring at concurrency" in log2.read_text(), "mid-point", environ,
                     timeout=700)
    assert {r.what for r in recs} == {"router role", "prefill role", "decode role"}, recs
    assert all(r.scratch for r in recs if r.what != "router role")  # the KV directory is on the workers' records
    assert done(rd) == set()

    final = subprocess.run(argv, cwd=ws, env=environ, capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stderr[-3000:]
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 1 and done(rd) == set(ids)
    measured = [ln.split()[2].rstrip(":") for ln in final.stderr.splitlines() if ": measuring at concurrency" in ln]
    assert measured == ids  # the point once, in the run that finished it
    assert "left running by a killed infx process" not in final.stderr  # the kernel stopped them all already
    verify = subprocess.run([sys.executable, "-m", "infx", "verify", str(rd.root), "--json"], cwd=ws, env=environ,
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert json.loads(verify.stdout)
    assert not of_workspace(ws)
    assert records(ws) == []  # every record of the killed runs was reaped or dropped
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    assert _kv_dirs() - kv_before == set()  # the killed runs' KV directories went with their records
