"""Slurm backend: one job per launch group (one array per GPU count when a run has several groups),
submitted with ``sbatch`` argv; each task runs ``infx run-group`` on its node against the shared results
directory. ``squeue`` (and ``sacct`` when accounting is on) tell queued/running apart for ``infx status``.

No shell strings: the batch script is a fixed two-line file (``exec "$@"``) written into the run
directory, and the ``infx run-group`` command travels as sbatch's script arguments.

Preemption is a pause: jobs are submitted requeueable (``--requeue``) with their log appended across
attempts (``--open-mode=append``), and Slurm sends SIGTERM to the batch step (which *is* ``infx run-group``,
exec'd) ``signal_lead`` seconds before the time limit (``--signal=B:TERM@N``). On SIGTERM the job writes the
point in flight ``interrupted``, stops its engine and exits 75 (:mod:`infx.preemption`) well within
``KillWait``; a requeued job (``SLURM_RESTART_COUNT``) or the same ``infx run --backend slurm`` resumes there.
The job's log says both, one line each.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from infx.atomic import write_text
from infx.diagnostics import Diagnostic, InfxError
from infx.preemption import SIGNAL_LEAD_S
from infx.sweep.layout import RunDir
from infx.sweep.prepare import PlannedGroup, RunPlan, SlurmJob, save_plan

JOB_SCRIPT = '#!/bin/sh\n# infx: runs its arguments (an argv, never a shell string)\nexec "$@"\n'


@dataclass
class Submission:
    job_id: str
    groups: list[str]  # fingerprints, in array-index order
    gpus: int  # per node
    argv: list[str]
    nodes: int = 1


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise InfxError(Diagnostic(f"`{tool}` not found: the slurm backend needs the Slurm client tools on PATH"))
    return path


def sbatch_argv(run_dir: RunDir, groups: Sequence[PlannedGroup], *, gpus: int, nodes: int = 1,
                python: str | None = None, partition: str | None = None, time_limit: str | None = None,
                max_parallel: int | None = None, extra: Sequence[str] = (), signal_lead: int = SIGNAL_LEAD_S
                ) -> list[str]:
    """The ``sbatch`` argv for one job (one group) or one array (several groups with the same GPU count):
    requeueable, its log appended across attempts, SIGTERM to ``infx run-group`` ``signal_lead`` seconds
    before the time limit."""
    root = run_dir.root.resolve()
    logs = root / "slurm"
    argv = [_need("sbatch"), "--parsable", f"--job-name=infx-{run_dir.run_id}"[:120],
            f"--chdir={os.getcwd()}", f"--output={logs}/%A_%a.out" if len(groups) > 1 else f"--output={logs}/%j.out",
            "--requeue", "--open-mode=append", f"--signal=B:TERM@{signal_lead}"]
    if len(groups) > 1:
        spec = f"0-{len(groups) - 1}" + (f"%{max_parallel}" if max_parallel else "")
        argv.append(f"--array={spec}")
    if gpus > 0:
        argv.append(f"--gres=gpu:{gpus}")
    if nodes > 1:  # a deployment across nodes: one allocation, one step per role inside it
        argv.append(f"--nodes={nodes}")
    if partition:
        argv.append(f"--partition={partition}")
    if time_limit:
        argv.append(f"--time={time_limit}")
    argv.extend(extra)
    argv.append(str(root / "slurm" / "job.sh"))
    argv.extend([python or sys.executable, "-m", "infx", "run-group", "--run-dir", str(root)])
    for g in groups:
        argv.extend(["--group", g.fingerprint[:16]])
    if len(groups) > 1:
        argv.append("--array-task")
    return argv


def submit(run_dir: RunDir, plan: RunPlan, groups: Sequence[PlannedGroup] | None = None, *,
           partition: str | None = None, time_limit: str | None = None, max_parallel: int | None = None,
           extra: Sequence[str] = (), signal_lead: int = SIGNAL_LEAD_S, python: str | None = None
           ) -> list[Submission]:
    """Submit the groups (default: all of the plan's), one sbatch per GPU count; record the job ids."""
    groups = list(plan.groups if groups is None else groups)
    write_text(run_dir.root / "slurm" / "job.sh", JOB_SCRIPT)
    os.chmod(run_dir.root / "slurm" / "job.sh", 0o755)
    by_gpus: dict[tuple[int, int], list[PlannedGroup]] = {}
    for g in groups:
        by_gpus.setdefault((g.gpus, g.nodes), []).append(g)
    subs: list[Submission] = []
    for (gpus, nodes), gs in by_gpus.items():
        argv = sbatch_argv(run_dir, gs, gpus=gpus, nodes=nodes, partition=partition, time_limit=time_limit,
                           max_parallel=max_parallel, extra=extra, signal_lead=signal_lead, python=python)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise InfxError(Diagnostic(f"sbatch failed (exit {proc.returncode}): {proc.stderr.strip()[:400]}"))
        job_id = proc.stdout.strip().split(";")[0]
        subs.append(Submission(job_id, [g.fingerprint for g in gs], gpus, argv, nodes))
    plan.slurm_jobs.extend(SlurmJob(job_id=s.job_id, groups=s.groups, gpus=s.gpus, nodes=s.nodes) for s in subs)
    save_plan(run_dir, plan)
    return subs


def pick_groups(plan: RunPlan, prefixes: Sequence[str], array_task: bool) -> list[PlannedGroup]:
    """The groups a ``run-group`` invocation owns: all given, or the one at ``$SLURM_ARRAY_TASK_ID``."""
    chosen: list[PlannedGroup] = []
    for pre in prefixes:
        match = [g for g in plan.groups if g.fingerprint.startswith(pre)]
        if len(match) != 1:
            raise InfxError(Diagnostic(f"group {pre!r} {'is ambiguous' if match else 'is not in'} "
                                       f"{plan.run_id}/plan.json"))
        chosen.append(match[0])
    if array_task:
        idx = os.environ.get("SLURM_ARRAY_TASK_ID")
        if idx is None or not idx.isdigit() or int(idx) >= len(chosen):
            raise InfxError(Diagnostic(f"--array-task needs SLURM_ARRAY_TASK_ID in 0..{len(chosen) - 1}, got {idx!r}"))
        chosen = [chosen[int(idx)]]
    return chosen


# ------------------------------------------------------------------------------------ queue state

def queue_states(job_ids: Sequence[str]) -> dict[str, str]:
    """``{job_id or job_id_index: STATE}`` for jobs still known to ``squeue`` (PENDING, RUNNING...).
    Array tasks appear as ``JOB_INDEX``; a pending array as ``JOB_[0-3]``. Empty when squeue is absent
    or did not answer (for display; :func:`wait_for_jobs` tells the two apart)."""
    return poll_queue(job_ids) or {}


def poll_queue(job_ids: Sequence[str]) -> dict[str, str] | None:
    """:func:`queue_states`, or None when ``squeue`` failed or timed out (a busy slurmctld): that is not
    'no jobs left'. A job Slurm has already forgotten (``Invalid job id``) is simply not listed."""
    if not job_ids or shutil.which("squeue") is None:
        return {}
    try:
        proc = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(job_ids)], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0 and "invalid job id" not in proc.stderr.lower():
        return None
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if "|" in line:
            jid, state = line.split("|", 1)
            out[jid.strip()] = state.strip()
    return out


def finished_states(job_ids: Sequence[str]) -> dict[str, str]:
    """Final states from ``sacct`` when accounting (or jobcomp) answers; empty otherwise."""
    if not job_ids or shutil.which("sacct") is None:
        return {}
    for args in (["-j", ",".join(job_ids)], ["-c", "-a", "-S", "00:00"]):
        try:
            proc = subprocess.run(["sacct", "-X", "-P", "-n", "--format=JobID,State", *args], capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        out = {}
        for line in proc.stdout.splitlines():
            parts = line.split("|")
            if len(parts) >= 2 and parts[0].split("_")[0] in job_ids:
                out[parts[0]] = parts[1].split()[0]
        if out:
            return out
    return {}


def group_queue_state(plan: RunPlan, fingerprint: str, queue: dict[str, str]) -> str | None:
    """PENDING / RUNNING for the job (or array task) that owns ``fingerprint``, if Slurm still lists it."""
    for job in reversed(plan.slurm_jobs):  # the latest submission wins
        groups = job.groups
        if fingerprint not in groups:
            continue
        jid = job.job_id
        if len(groups) == 1:
            return queue.get(jid)
        idx = groups.index(fingerprint)
        if f"{jid}_{idx}" in queue:
            return queue[f"{jid}_{idx}"]
        for key, state in queue.items():  # a pending array prints as JOB_[0-3] or JOB_[1,3]
            if key.startswith(f"{jid}_[") and state == "PENDING":
                return state
        return None
    return None


def wait_for_jobs(job_ids: Sequence[str], timeout: float, poll: float = 1.0) -> bool:
    """Block until none of the jobs is queued or running (bounded: never waits past ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if poll_queue(job_ids) == {}:
            return True
        time.sleep(poll)
    return False


def cancel(job_ids: Sequence[str]) -> None:
    if job_ids and shutil.which("scancel"):
        subprocess.run(["scancel", *job_ids], capture_output=True, timeout=30)


def job_log_tail(run_dir: RunDir, lines: int = 20) -> str:
    out = []
    for f in sorted((run_dir.root / "slurm").glob("*.out")):
        text = f.read_text(errors="replace").splitlines()[-lines:]
        out.append(f"--- {f.name}\n" + "\n".join(text))
    return "\n".join(out)

