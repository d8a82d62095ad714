"""Slurm backend: sbatch argv (fast) and a real sweep through a real single-node Slurm (slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infx.sweep import slurm
from infx.sweep.layout import RunDir
from infx.sweep.prepare import PlannedGroup, RunPlan, RunRequest, SlurmJob

REPO = Path(__file__).resolve().parents[2]
SLURM_SH = REPO / ".ci" / "slurm.sh"


def _plan(groups: list[PlannedGroup]) -> RunPlan:
    req = RunRequest(config_files=[], runner_config="", config_keys=["k"], results="/r")
    return RunPlan(request=req, run_id="r1", points={}, groups=groups, created_at=0.0)


def test_sbatch_argv_single_job_and_array(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm, "_need", lambda tool: tool)
    rd = RunDir(tmp_path, "r1")
    one = slurm.sbatch_argv(rd, [PlannedGroup(fingerprint="a" * 64, point_ids=["p"], gpus=4)], gpus=4,
                            python="/py")
    assert one[:2] == ["sbatch", "--parsable"]
    assert "--gres=gpu:4" in one and not any(a.startswith("--array") for a in one)
    # preemption is a pause: requeueable, one log across attempts, SIGTERM to the batch step ahead of the limit
    assert {"--requeue", "--open-mode=append", f"--signal=B:TERM@{slurm.SIGNAL_LEAD_S}"} <= set(one)
    lead = slurm.sbatch_argv(rd, [PlannedGroup(fingerprint="a" * 64, point_ids=["p"])], gpus=0, python="/py",
                             time_limit="5", signal_lead=30)
    assert "--signal=B:TERM@30" in lead and "--time=5" in lead
    tail = one[one.index(str(rd.root.resolve() / "slurm" / "job.sh")) + 1:]
    assert tail == ["/py", "-m", "infx", "run-group", "--run-dir", str(rd.root.resolve()), "--group", "a" * 16]
    many = slurm.sbatch_argv(rd, [PlannedGroup(fingerprint=c * 64, point_ids=[c], gpus=0) for c in "abc"], gpus=0,
                             python="/py", max_parallel=2)
    assert "--array=0-2%2" in many and not any(a.startswith("--gres") for a in many)  # CPU points: no gres
    assert many[-1] == "--array-task" and many.count("--group") == 3


def test_pick_groups_by_array_index(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan([PlannedGroup(fingerprint=c * 64, point_ids=[c]) for c in "ab"])
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    assert [g.fingerprint[0] for g in slurm.pick_groups(plan, ["a" * 16, "b" * 16], True)] == ["b"]
    assert len(slurm.pick_groups(plan, ["a" * 16, "b" * 16], False)) == 2
    from infx.diagnostics import InfxError

    with pytest.raises(InfxError):
        slurm.pick_groups(plan, ["c" * 16], False)


def test_group_queue_state_maps_array_tasks() -> None:
    plan = _plan([PlannedGroup(fingerprint=c * 64, point_ids=[c]) for c in "ab"])
    plan.slurm_jobs.append(SlurmJob(job_id="7", groups=["a" * 64, "b" * 64], gpus=0))
    assert slurm.group_queue_state(plan, "a" * 64, {"7_0": "RUNNING", "7_[1]": "PENDING"}) == "RUNNING"
    assert slurm.group_queue_state(plan, "b" * 64, {"7_0": "RUNNING", "7_[1]": "PENDING"}) == "PENDING"
    assert slurm.group_queue_state(plan, "b" * 64, {}) is None


# ------------------------------------------------------------------------------------------ real Slurm

def _daemons_up() -> bool:
    r = subprocess.run(["bash", str(SLURM_SH), "status"], capture_output=True, text=True)
    return "slurmctld.pid: " in r.stdout and "slurmctld.pid: not running" not in r.stdout and \
        "slurmd.pid: not running" not in r.stdout


@pytest.fixture(scope="module")
def local_slurm():
    """A real single-node Slurm (.ci/slurm.sh). Started here when not already up (root only) and then
    stopped again by PID; left alone when CI's services started it."""
    if os.geteuid() != 0 and not shutil.which("sbatch"):
        pytest.skip("Slurm needs root to install/start (.ci/slurm.sh)")
    started = False
    if not _daemons_up():
        r = subprocess.run(["bash", str(SLURM_SH), "up"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        started = True
    try:
        yield
    finally:
        if started:
            subprocess.run(["bash", str(SLURM_SH), "down"], capture_output=True, text=True, timeout=120)
            assert not _daemons_up()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sweep_through_real_slurm(tmp_path: Path, tiny_model_dir: Path, local_slurm: None) -> None:
    args = [sys.executable, "-m", "infx", "run", "--backend", "slurm", "--wait", "--wait-timeout", "780",
            "--max-parallel", "1", "--config-files", str(REPO / "tests/sweep/fixtures/cpu-two-arms.yaml"),
            "--runner-config", str(REPO / "configs/runners.yaml"), "--config-keys", "tinyllama-*",
            "--results", str(tmp_path), "--run-id", "slurm1", "--prompts-per-conc", "2"]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=840)
    rd = RunDir(tmp_path, "slurm1")
    assert r.returncode == 0, r.stderr[-3000:] + slurm.job_log_tail(rd)
    assert "submitted job" in r.stderr
    plan = json.loads(rd.plan_file.read_text())
    assert len(plan["groups"]) == 2 and len(plan["slurm_jobs"]) == 1  # one array for both groups
    for pid in plan["points"]:
        st = rd.read_status(pid)
        assert st is not None and st.state == "done", (pid, st, slurm.job_log_tail(rd))
    jobs = {g.slurm_job for g in rd.groups()}
    job_id = plan["slurm_jobs"][0]["job_id"]
    assert jobs == {f"{job_id}_0", f"{job_id}_1"}  # each group ran as its own array task
    assert len(list((rd.root / "slurm").glob("*.out"))) == 2

    status = subprocess.run([sys.executable, "-m", "infx", "status", str(rd.root), "--json"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)[0]
    assert data["counts"] == {"done": 4}

    again = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stderr  # resume: nothing submitted


def test_run_group_starts_nothing_after_fail_fast(tmp_path: Path) -> None:
    from infx.sweep.prepare import save_plan

    rd = RunDir(tmp_path, "r1")
    plan = _plan([PlannedGroup(fingerprint="a" * 64, point_ids=["p"])])
    save_plan(rd, plan)
    rd.stop_file.write_text("fail-fast\n")
    r = subprocess.run([sys.executable, "-m", "infx", "run-group", "--run-dir", str(rd.root), "--group", "a" * 16],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "fail-fast" in r.stderr and "not starting group" in r.stderr
    assert not (rd.root / "groups").exists()  # nothing was launched


def test_unknown_group_is_a_diagnostic(tmp_path: Path) -> None:
    from infx.sweep.prepare import save_plan

    rd = RunDir(tmp_path, "r1")
    save_plan(rd, _plan([PlannedGroup(fingerprint="a" * 64, point_ids=["p"])]))
    r = subprocess.run([sys.executable, "-m", "infx", "run-group", "--run-dir", str(rd.root), "--group", "ffff"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "is not in r1/plan.json" in r.stderr and "Traceback" not in r.stderr
