"""The CPU disaggregated deployment across two Slurm nodes, through the real submission path: `infx run --backend
slurm` on a fleet that declares two nodes asks sbatch for both, and inside the job the prefill pool runs on the
first node and the decode pool on the second (.ci/slurm-two-node.sh: two slurmd on this host, n1 and n2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infx.sweep.layout import RunDir
from tests.deployments.test_disagg_e2e import KEY, REPO, needs_router

TWO = REPO / ".ci" / "slurm-two-node.sh"
CONF = "/etc/slurm-two/slurm.conf"


@pytest.fixture(scope="module")
def two_node_slurm():  # type: ignore[no-untyped-def]
    """The two-node cluster, started when not already up (root only) and stopped again when started here."""
    if os.geteuid() != 0:
        pytest.skip("Slurm needs root to start (.ci/slurm-two-node.sh)")
    before = subprocess.run(["bash", str(TWO), "status"], capture_output=True, text=True).stdout
    started = "not running" in before
    r = subprocess.run(["bash", str(TWO), "up"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    try:
        yield
    finally:
        if started:
            subprocess.run(["bash", str(TWO), "down"], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.timeout(1500)
@needs_router
@pytest.mark.usefixtures("two_node_slurm")
def test_prefill_and_decode_run_on_nodes_of_their_own(tmp_path: Path, tiny_model_dir: Path) -> None:
    from infx.sweep import slurm

    runners = yaml.safe_load((REPO / "configs/runners.yaml").read_text())
    for fleet in ("local", "cluster:local"):
        runners["hardware"][fleet]["nodes"] = 2  # the fleet: two compute nodes
    (tmp_path / "runners.yaml").write_text(yaml.safe_dump(runners))
    args = [sys.executable, "-m", "infx", "run", "--config-files", str(REPO / "configs/cpu-master.yaml"),
            "--runner-config", str(tmp_path / "runners.yaml"), "--config-keys", KEY, "--results", str(tmp_path),
            "--run-id", "pd-two", "--prompts-per-conc", "4", "--ready-timeout", "600", "--backend", "slurm",
            "--wait", "--wait-timeout", "1200"]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=1300,
                       env={**os.environ, "SLURM_CONF": CONF, "PYTHONPATH": str(REPO)})
    rd = RunDir(tmp_path, "pd-two")
    assert r.returncode == 0, r.stderr[-3000:] + slurm.job_log_tail(rd)
    plan = json.loads(rd.plan_file.read_text())
    (group,) = plan["groups"]
    (job,) = plan["slurm_jobs"]
    assert group["nodes"] == 2 and job["nodes"] == 2  # sbatch was asked for both nodes
    (pid,) = plan["points"]
    st = rd.read_status(pid)
    assert st is not None and st.state == "done", (st, slurm.job_log_tail(rd))
    (rec_file,) = (rd.root / "groups").glob("*.deployment.json")
    rec = json.loads(rec_file.read_text())
    by_name = {role["name"]: role for role in rec["roles"]}
    assert by_name["prefill"]["placement"]["first_node"] == 0 and by_name["decode"]["placement"]["first_node"] == 1
    assert by_name["prefill"]["step_port"]["node"] == "n1" and by_name["decode"]["step_port"]["node"] == "n2"
    assert "--relative=1" in by_name["decode"]["exec_argv"]
