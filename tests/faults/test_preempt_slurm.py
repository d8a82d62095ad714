"""Preemption through the real local Slurm is a pause: the job gets SIGTERM mid-point (``scancel
--signal=TERM --full``, ``scontrol requeue`` of the running job as a preempting scheduler does, and the
``--signal=B:TERM@N`` sbatch asks for ahead of a time limit), writes the point in flight ``interrupted``,
stops and exits 75; requeued (or submitted again) it resumes and finishes its points. The job's own log
says both, one line each, in one file across attempts.

The jobs run the real ``infx run-group`` body (orchestrator, signal handling, job-log lines) with fake
executors (``slurm_fake_group.py``): an engine start per attempt would not fit the suite's time; SIGTERM
through the real load generator and engine is ``test_kill_e2e.py``'s step 4."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from infx.sweep import slurm
from infx.sweep.layout import RunDir
from infx.sweep.prepare import PlannedGroup, RunPlan, RunRequest, save_plan
from tests.faults.killing import wait
from tests.sweep.fakes import make_point
from tests.sweep.test_slurm import local_slurm  # noqa: F401  (the real local Slurm fixture)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
IDS = [f"a-tp1-c{c}" for c in (1, 2, 4)]


def _setup(tmp_path: Path, run_id: str) -> tuple[RunDir, RunPlan, Path]:
    """A one-group plan of three points, and the interpreter wrapper the job runs in place of python."""
    rd = RunDir(tmp_path / "results", run_id)
    pts = [make_point("a", 1, c) for c in (1, 2, 4)]
    req = RunRequest(config_files=[], runner_config="", config_keys=["k"], results=str(rd.results.root))
    plan = RunPlan(request=req, run_id=run_id, points={p.point_id: p.to_row() for p in pts},
                   groups=[PlannedGroup(fingerprint="f" * 64, point_ids=[p.point_id for p in pts])],
                   created_at=time.time())
    save_plan(rd, plan)
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} "
                       f"{REPO / 'tests/faults/slurm_fake_group.py'} \"$@\"\n")
    wrapper.chmod(0o755)
    return rd, plan, wrapper


def _job(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=30).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def _ended(job_id: str, state: str) -> Callable[[], bool]:
    return lambda: _job(job_id).get("JobState") == state


def _start_now(job_id: str) -> None:
    """Lift the hold Slurm puts on a requeued job (BeginTime, about two minutes: what keeps slurmd from taking
    the new attempt's credential for the revoked one of the attempt that just ended). The new attempt must
    still start in a later second than that end, or slurmd refuses it ("Job credential revoked")."""
    time.sleep(2)
    subprocess.run(["scontrol", "update", f"jobid={job_id}", "StartTime=now"], check=True, timeout=30)


def _hold(rd: RunDir, point_id: str | None) -> None:
    hold = rd.results.root.parent / "HOLD"
    if point_id is None:
        hold.unlink(missing_ok=True)
    else:
        hold.write_text(point_id)


def _states(rd: RunDir) -> dict[str, str | None]:
    return {pid: (st.state if (st := rd.read_status(pid)) else None) for pid in IDS}


def _of_run(rd: RunDir) -> list[int]:
    """Live processes whose command line names the run directory (the job's run-group)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(rd.root).encode() in (entry / "cmdline").read_bytes():
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def _ledger(rd: RunDir) -> list[str]:
    path = rd.results.root.parent / "ledger.txt"
    return path.read_text().splitlines() if path.is_file() else []


def _paused(rd: RunDir, job_id: str, point_id: str, log: Path) -> None:
    """The state a SIGTERM leaves: the point in flight interrupted with its partial result and records, exit 75,
    one line in the job's log, no process of the job alive, no temp file."""
    # the attempt ended: exit 75, or (requeued by Slurm) back in the queue
    assert wait(lambda: _job(job_id).get("ExitCode") == "75:0" or _job(job_id).get("JobState") == "PENDING", 60), \
        (_job(job_id), log.read_text()[-3000:])
    assert wait(lambda: f"point(s) {point_id} interrupted" in log.read_text(), 60), log.read_text()[-3000:]
    st = rd.read_status(point_id)
    assert st is not None and st.state == "interrupted" and st.failure_class == "preempted", st
    partial = rd.read_result(point_id)
    assert partial is not None and partial.complete is False
    assert (rd.point_dir(point_id) / "records.jsonl.gz").read_bytes() == b"two requests sent, both cancelled"
    assert wait(lambda: not _of_run(rd), 30), _of_run(rd)
    assert [p for p in rd.root.rglob("*") if p.name.endswith(".tmp")] == []
    assert rd.groups()[0].state == "interrupted"


def _finished(rd: RunDir, job_id: str, log: Path) -> None:
    assert wait(_ended(job_id, "COMPLETED"), 300), (_job(job_id), log.read_text()[-3000:])
    assert _states(rd) == dict.fromkeys(IDS, "done"), (_states(rd), log.read_text()[-3000:])
    measured = [ln.split()[1] for ln in _ledger(rd) if ln.startswith("measured ")]
    assert sorted(measured) == sorted(IDS)  # every point measured exactly once (the interrupted ones again)
    assert all(r.complete for pid in IDS if (r := rd.read_result(pid)) is not None)
    assert not _of_run(rd) and [p for p in rd.root.rglob("*") if p.name.endswith(".tmp")] == []
    verify = subprocess.run([sys.executable, "-m", "infx", "verify", str(rd.root)], cwd=REPO, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert verify.returncode == 0 and f"{len(IDS)} point(s) ok" in verify.stdout + verify.stderr, \
        verify.stdout + verify.stderr


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("local_slurm")
def test_preempted_job_resumes_on_requeue_and_finishes(tmp_path: Path) -> None:
    rd, plan, python = _setup(tmp_path, "pre")
    _hold(rd, IDS[1])
    job = slurm.submit(rd, plan, python=str(python))[0].job_id
    log = rd.root / "slurm" / f"{job}.out"
    assert wait(lambda: log.is_file() and f"HOLDING {IDS[1]}" in log.read_text(), 300), _job(job)

    # 1. a signal to every process of the job (as a time limit or a preemption sends), then an admin's requeue
    subprocess.run(["scancel", "--signal=TERM", "--full", job], check=True, timeout=30)
    assert wait(_ended(job, "FAILED"), 60), _job(job)
    _paused(rd, job, IDS[1], log)
    assert _states(rd) == {IDS[0]: "done", IDS[1]: "interrupted", IDS[2]: None}
    _hold(rd, IDS[2])
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)
    _start_now(job)
    assert wait(lambda: f"HOLDING {IDS[2]}" in log.read_text(), 300), (_job(job), log.read_text()[-3000:])

    # 2. preemption as the scheduler does it: requeue the running job (SIGTERM, then back to the queue)
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)
    _paused(rd, job, IDS[2], log)
    assert _states(rd) == {IDS[0]: "done", IDS[1]: "done", IDS[2]: "interrupted"}
    _hold(rd, None)
    assert wait(lambda: _job(job).get("JobState") == "PENDING", 60), _job(job)
    _start_now(job)
    _finished(rd, job, log)

    text = log.read_text()  # one log across the three attempts: each pause and each resume, one line each
    assert text.count("interrupted by SIGTERM") == 2 and "resumed (restart 1)" in text and \
        "resumed (restart 2)" in text, text
    assert text.index(f"point(s) {IDS[1]} interrupted") < text.index("resumed (restart 1)") < \
        text.index(f"point(s) {IDS[2]} interrupted") < text.index("resumed (restart 2)")
    assert [ln.split()[1] for ln in _ledger(rd) if ln.startswith("start ")] == \
        [IDS[0], IDS[1], IDS[1], IDS[2], IDS[2]]  # nothing done was started again


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("local_slurm")
def test_time_limit_sends_sigterm_first_and_the_same_submission_resumes(tmp_path: Path) -> None:
    rd, plan, python = _setup(tmp_path, "limit")
    _hold(rd, IDS[1])  # never released in the first job: only the time limit ends it
    job = slurm.submit(rd, plan, time_limit="1", signal_lead=30, python=str(python))[0].job_id
    log = rd.root / "slurm" / f"{job}.out"
    assert wait(lambda: log.is_file() and f"HOLDING {IDS[1]}" in log.read_text(), 300), _job(job)
    # SIGTERM comes 30 s before the one-minute limit, when slurmctld's periodic time-limit check finds it due
    # (on this node 30 to 60 s after the start; the resubmitted job below ends long before its own signal)
    assert wait(lambda: _job(job).get("JobState") not in ("RUNNING", "COMPLETING"), 150), _job(job)
    info = _job(job)
    assert info.get("JobState") == "FAILED" and info.get("ExitCode") == "75:0", info  # paused, not TIMEOUT
    _paused(rd, job, IDS[1], log)
    _hold(rd, None)
    again = slurm.submit(rd, plan, [g.model_copy(update={"point_ids": IDS[1:]}) for g in plan.groups],
                         time_limit="1", signal_lead=30, python=str(python))[0].job_id
    _finished(rd, again, rd.root / "slurm" / f"{again}.out")
