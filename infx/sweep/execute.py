"""Run a prepared sweep, the one way: :func:`wire` builds the starter, measurer and evaluator a request asks
for, :func:`run_sweep` runs the groups through the orchestrator, and the three front ends use them:

* :func:`run_locally`: on this host with live progress and a final table (``infx run``, ``run-point``,
  ``repro``, ``demo``); each finished point is ingested into the store once its receipt is written;
* :func:`run_groups`: the planned groups a Slurm job owns (``infx run-group``), from ``plan.json``;
* :func:`submit_slurm`: the groups that still need work, as Slurm jobs asking for the nodes and GPUs per
  node ``plan.json`` records (``infx run --backend slurm``, ``infx repro --backend slurm``).

Each front end returns the command's exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from infx import preemption
from infx.diagnostics import Diagnostic, InfxError
from infx.sweep.interfaces import EngineStarter, PointEvaluator, PointMeasurer
from infx.sweep.layout import RunDir
from infx.sweep.orchestrator import (
    Emit,
    Orchestrator,
    PointFinal,
    SweepOptions,
    mark_skipped,
    plan_resume,
)
from infx.sweep.prepare import (
    Prepared,
    RunPlan,
    RunRequest,
    SlurmJob,
    finish_invocation,
    load_plan,
    open_invocation,
    options_of,
    save_plan,
    start_invocation,
    workspace_of,
    write_plan,
)
from infx.sweep.summary import SweepSummary

if TYPE_CHECKING:
    from infx.catalog.runners import RunnerConfig

EXIT_FAILED_POINTS = 1
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_PREEMPTED = preemption.EXIT_PREEMPTED  # SIGTERM: paused, resumable


@dataclass(frozen=True)
class Wiring:
    """What runs a sweep's points: the engine starter, the load measurer and (when evals are graded) the
    evaluator."""

    starter: EngineStarter
    measurer: PointMeasurer
    evaluator: PointEvaluator | None = None


def wire(request: RunRequest, runners: RunnerConfig | None = None) -> Wiring:
    """The real parts a request asks for: launches rendered from the recipes in the runtime each runner
    declares (``runners``: the request's runners.yaml, read here when not given), or replayed from a bundle;
    the load generator with the request's profile and telemetry; the evals when the request grades them."""
    from infx.sweep.local import LocalEvaluator, LocalMeasurer, LocalStarter, kv_calibrator
    from infx.sweep.rendering import renderer_at_port, replay_renderer

    if runners is None and request.runner_config and Path(request.runner_config).is_file():
        from infx.catalog import load_runners

        runners = load_runners(request.runner_config)
    render = (replay_renderer(request.replay) if request.replay
              else renderer_at_port(request.recipes, workspace_of(request), runners.runtimes() if runners else None))
    calibrate = None if request.replay else kv_calibrator(request.runner_config)  # a replay predicts nothing
    return Wiring(LocalStarter(render, calibrate=calibrate), LocalMeasurer(request.load, telemetry=request.telemetry),
                  None if request.evals == "none" else LocalEvaluator(request.eval_limit))


def run_sweep(prep: Prepared, wiring: Wiring, emit: Emit | None = None, on_final: PointFinal | None = None,
              **option_overrides: bool | float | int) -> SweepSummary:
    """Open the invocation (manifest), mark the gate's rejects skipped, run every group that still has work
    in order, close the invocation."""
    rd = prep.run_dir
    start_invocation(prep)
    orch = Orchestrator(rd, wiring.starter, wiring.measurer, options_of(prep.request, **option_overrides), emit,
                        evaluator=wiring.evaluator, on_final=on_final)
    skipped = orch.mark_skipped(prep.rejects)
    try:
        return orch.run(prep.groups, skipped)
    finally:
        finish_invocation(rd)


def sigterm_as_pause() -> None:
    """SIGTERM (Slurm's preemption, time limit or scancel, a stopped CI job) is a pause
    (:mod:`infx.preemption`): the point in flight is written ``interrupted`` with its records, the running
    engine is stopped, finished points stay, nothing is half-written; the command exits with
    :data:`EXIT_PREEMPTED` and the same command (or the requeued job) resumes."""
    preemption.install()


def interrupted_exit() -> int:
    """The exit code of an interrupted sweep: a SIGTERM's pause, or Ctrl-C's."""
    return EXIT_PREEMPTED if preemption.requested() else EXIT_INTERRUPTED


def ingest_final(rd: RunDir) -> Callable[[str], None]:
    """The point-final hook of local runs: ingest the point into the store (``RESULTS/infx.db`` or the
    workspace's). It runs once the point's receipt is written, and ingest verifies the receipt before a
    row is stored (a point whose files do not match it is quarantined). Slurm nodes never write the
    shared store: the submitting host ingests after ``--wait``, or ``infx ingest`` later.

    A store that cannot be reached (a team PostgreSQL restarted mid-sweep) costs no point: the point stays on
    disk with its receipt, one line per point says ``not ingested: store unreachable`` (the reason with the
    first), the sweep goes on and tries the store again at the next point, and ``infx ingest RESULTS`` stores
    the missed points later (once each: ingest skips what the store already holds). Any other problem is
    printed once; the sweep goes on."""
    warned = False
    missed = 0  # points not ingested since the store stopped answering
    later = f"`infx ingest {rd.results.root}`"

    def final(point_id: str) -> None:
        nonlocal warned, missed
        try:
            from infx.results.store import StoreUnreachable, ingest_point

            try:
                rep = ingest_point(rd.results.root, rd.run_id, point_id)
            except StoreUnreachable as exc:
                why = f" ({exc.diagnostics[0].message})" if missed == 0 and exc.diagnostics else ""
                missed += 1
                print(f"ingest: {point_id}: not ingested: store unreachable{why}; kept on disk, {later} stores it "
                      "once the store is back", file=sys.stderr)
                return
            problems = [str(d) for d in rep.problems]
        except Exception as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        if missed:
            print(f"ingest: the store answers again; {missed} point(s) before {point_id} were not ingested "
                  f"({later} stores them)", file=sys.stderr)
            missed = 0
        if problems and not warned:
            warned = True
            print(f"ingest: {problems[0]} (re-run {later} later)", file=sys.stderr)

    return final


def run_locally(prep: Prepared, wiring: Wiring | None = None) -> int:
    """Run a prepared sweep on this host with live progress and a final table; the exit code."""
    from rich.console import Console

    from infx.sweep.progress import Progress, results_table

    sigterm_as_pause()
    interrupted = False
    with Progress() as progress:
        try:
            summary = run_sweep(prep, wiring or wire(prep.request, prep.runners), progress,
                                ingest_final(prep.run_dir))
        except KeyboardInterrupt:
            interrupted = True
    Console(stderr=True).print(results_table(prep.run_dir, [p.point_id for p in prep.points]))
    print(f"results: {prep.run_dir.root}", file=sys.stderr)
    if interrupted:
        if preemption.requested():
            print(f"preempted (SIGTERM): state written; the same command resumes (exit {EXIT_PREEMPTED})",
                  file=sys.stderr)
        return interrupted_exit()
    _print_outcome(summary)
    return 0 if summary.ok else EXIT_FAILED_POINTS


def _print_outcome(summary: SweepSummary) -> None:
    if summary.launches == 0 and not summary.failed and not summary.done:
        print(f"nothing to do: {len(summary.reused)} point(s) already measured"
              + (f", {len(summary.previously_failed)} failed before (--rerun-failed retries them)"
                 if summary.previously_failed else "")
              + (f", {len(summary.skipped)} rejected by the gate" if summary.skipped else ""), file=sys.stderr)
    if summary.accuracy_failed:
        print(f"accuracy-fail: {len(summary.accuracy_failed)} point(s) below their eval threshold: "
              f"{', '.join(summary.accuracy_failed)}", file=sys.stderr)
    if summary.eval_failed:
        print(f"eval failed: {len(summary.eval_failed)} point(s) got no complete score: "
              f"{', '.join(summary.eval_failed)}", file=sys.stderr)


def run_groups(rd: RunDir, plan: RunPlan, fingerprints: list[str], wiring: Wiring | None = None) -> int:
    """Body of ``infx run-group``: the planned points of the groups, re-rendered (their fingerprints must
    come out as planned), run in this job's allocation. The invocation is opened and closed as a local
    run's is, but a fail-fast STOP of the running sweep is kept."""
    from infx.sweep.grouping import LaunchGroup
    from infx.sweep.progress import Progress
    from infx.workspace import set_override

    sigterm_as_pause()
    _say_resumed(rd, fingerprints)
    if rd.stop_file.exists():
        print(f"fail-fast: {rd.stop_file} exists; not starting group(s) {', '.join(f[:12] for f in fingerprints)}",
              file=sys.stderr)
        return 0
    if plan.request.workspace:  # a Slurm node works in the workspace the run was prepared in
        set_override(Path(plan.request.workspace))
    planned = {g.fingerprint: g for g in plan.groups}
    groups = []
    for fp in fingerprints:
        pts = [plan.point(pid) for pid in planned[fp].point_ids]
        groups.append(LaunchGroup(fp, pts, engine=pts[0].framework, image=pts[0].image))
    wiring = wiring or wire(plan.request)
    open_invocation(rd, plan.request, [p.image for g in groups for p in g.points], clear_stop=False)
    code = 0
    with Progress() as progress:
        orch = Orchestrator(rd, wiring.starter, wiring.measurer, options_of(plan.request), progress,
                            evaluator=wiring.evaluator)
        try:
            summary = orch.run(groups)
            code = 0 if summary.ok else EXIT_FAILED_POINTS
        except KeyboardInterrupt:
            code = interrupted_exit()
        finally:
            finish_invocation(rd)
    if code == EXIT_PREEMPTED:
        _say_interrupted(rd, [p.point_id for g in groups for p in g.points])
    return code


def _job_name() -> str:
    job, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{job}_{task}" if job and task else os.environ.get("SLURM_JOB_ID", "")


def _say_resumed(rd: RunDir, fingerprints: list[str]) -> None:
    """One line in the job's log when Slurm runs it again (requeued after a preemption or by hand)."""
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    if restarts.isdigit() and int(restarts) > 0:
        print(f"infx: job {_job_name()} resumed (restart {restarts}): group(s) "
              f"{', '.join(f[:12] for f in fingerprints)} of {rd.root}; finished points are kept, interrupted "
              "ones are measured again", file=sys.stderr, flush=True)


def _say_interrupted(rd: RunDir, point_ids: list[str]) -> None:
    """One line in the job's log when SIGTERM paused it: which point was interrupted, how it resumes."""
    cut = [pid for pid in point_ids if (st := rd.read_status(pid)) is not None and st.state == "interrupted"]
    print(f"infx: job {_job_name()} interrupted by SIGTERM: "
          + (f"point(s) {', '.join(cut)} interrupted" if cut else "no point in flight")
          + f"; engine stopped, state written; requeue the job or re-run the same command to resume "
          f"(exit {EXIT_PREEMPTED})", file=sys.stderr, flush=True)


def submit_slurm(prep: Prepared, wait: bool, wait_timeout: float, partition: str | None, time_limit: str | None,
                 max_parallel: int | None, signal_lead: int = preemption.SIGNAL_LEAD_S) -> int:
    """Submit a prepared sweep's groups that still need work as Slurm jobs (``--wait``: until they ended),
    each on the nodes and GPUs per node ``plan.json`` records for it."""
    from infx.sweep import slurm

    rd = prep.run_dir
    previous_jobs = _previous_jobs(prep)
    start_invocation(prep)
    plan = write_plan(prep)
    if previous_jobs:  # keep the history, so `infx status` still maps earlier jobs
        plan.slurm_jobs[:0] = previous_jobs
        save_plan(rd, plan)
    # gate rejects are recorded now; resumed points are not submitted; points whose eval is still to
    # grade are submitted again
    mark_skipped(rd, prep.rejects)
    evaluator = wire(prep.request, prep.runners).evaluator if prep.request.evals != "none" else None
    todo, summary = plan_resume(rd, prep.groups, SweepOptions(rerun_failed=prep.request.rerun_failed,
                                                              load_key=prep.request.load.key()), evaluator)
    print(f"slurm: {len(prep.points)} point(s): {len(summary.reused)} already measured, "
          f"{len(summary.previously_failed)} failed before, {len(prep.rejects)} rejected by the gate, "
          f"{sum(len(g.points) for g in todo)} to run in {len(todo)} group(s)", file=sys.stderr)
    if not todo:
        print("nothing to do", file=sys.stderr)
        return 0 if not summary.previously_failed else EXIT_FAILED_POINTS
    planned = {g.fingerprint: g for g in plan.groups}  # nodes and GPUs per node as plan.json has them
    subs = slurm.submit(rd, plan, [planned[g.fingerprint].model_copy(update={"point_ids": g.point_ids})
                                   for g in todo], partition=partition, time_limit=time_limit,
                        max_parallel=max_parallel,
                        signal_lead=signal_lead)
    for s in subs:
        print(f"submitted job {s.job_id}: {len(s.groups)} group(s), {s.nodes} node(s) x gres gpu:{s.gpus}",
              file=sys.stderr)
    print(f"follow with: infx status {rd.root}", file=sys.stderr)
    if not wait:
        return 0
    if not slurm.wait_for_jobs([s.job_id for s in subs], wait_timeout):
        print(f"slurm: jobs still queued/running after {wait_timeout:g}s", file=sys.stderr)
        return EXIT_FAILED_POINTS
    return _ingest_finished(rd)


def _previous_jobs(prep: Prepared) -> list[SlurmJob]:
    """The Slurm jobs an earlier submission of this run recorded; refuses while any is still queued or
    running (two submissions would measure the same points at once)."""
    from infx.sweep import slurm

    rd = prep.run_dir
    if not rd.plan_file.is_file():
        return []
    try:
        previous = load_plan(rd).slurm_jobs
    except InfxError:
        return []
    live = slurm.queue_states([j.job_id for j in previous])
    if live:
        raise InfxError(Diagnostic(
            f"run {prep.run_id} still has Slurm jobs queued or running ({', '.join(sorted(live))}): wait for "
            f"them (infx status {rd.root}) or scancel them, then re-run", str(rd.plan_file)))
    return previous


def _ingest_finished(rd: RunDir) -> int:
    """After ``--wait``: the submitting host ingests what the nodes measured (the same point-final hook
    as a local run, each point's receipt verified by ingest); the exit code from the points' states."""
    from infx.sweep.status import run_state

    st = run_state(rd)
    final = ingest_final(rd)
    for p in st.points:
        if p.state in ("done", "failed", "skipped"):
            final(p.point_id)
    counts = st.counts()
    print("slurm: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), file=sys.stderr)
    return 0 if set(counts) <= {"done", "skipped"} else EXIT_FAILED_POINTS
